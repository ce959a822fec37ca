import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateNested,
} from 'class-validator';
import { MULTITASK_STRATEGIES, type MultitaskStrategy } from '../../domain/run/multitask';

/** Request bodies and query strings of /v1. Field names are the wire's snake_case; unknown fields are refused. */

export class TextPart {
  @ApiProperty({ enum: ['text'] })
  @IsIn(['text'])
  type!: 'text';

  @ApiProperty({ example: 'What is 17 multiplied by 23?' })
  @IsString()
  @Matches(/\S/, { message: 'text must not be empty' })
  text!: string;
}

const STRATEGY_MESSAGE = `multitask_strategy must be one of: ${MULTITASK_STRATEGIES.join(', ')}`;

export class MessageBody {
  @ApiProperty({ type: [TextPart] })
  @IsArray()
  @ArrayMinSize(1, { message: 'content must hold at least one text part' })
  @ArrayMaxSize(32)
  @ValidateNested({ each: true })
  @Type(() => TextPart)
  content!: TextPart[];

  @ApiPropertyOptional({
    enum: MULTITASK_STRATEGIES,
    description:
      "What the message does while a run of the session works: reject (409 naming the active run), enqueue (its run waits behind the session's runs, FIFO) interrupt (the active run stops at its next safe point and ends interrupted; this one runs next, with its partial work) or rollback (like interrupt, but this one runs without the stopped run's work). Default: the agent's `multitask_strategy`, else reject.",
  })
  @IsOptional()
  @IsIn(MULTITASK_STRATEGIES, { message: STRATEGY_MESSAGE })
  multitask_strategy?: MultitaskStrategy;
}

/** `POST /v1/sessions/{id}/messages?multitask_strategy=…` (the body field wins when both agree; they may not differ). */
export class MessageQuery {
  @ApiPropertyOptional({ enum: MULTITASK_STRATEGIES })
  @IsOptional()
  @IsIn(MULTITASK_STRATEGIES, { message: STRATEGY_MESSAGE })
  multitask_strategy?: MultitaskStrategy;
}

/** `POST /v1/sessions` `message` (ADR 0053): the content of the session's first user message. */
export class InitialMessage {
  @ApiProperty({ type: [TextPart] })
  @IsArray()
  @ArrayMinSize(1, { message: 'content must hold at least one text part' })
  @ArrayMaxSize(32)
  @ValidateNested({ each: true })
  @Type(() => TextPart)
  content!: TextPart[];
}

/** `POST /v1/sessions`. */
export class CreateSessionBody {
  @ApiPropertyOptional({
    example: 'general',
    description: 'Agent to bind; its current version is pinned for the session. Default: AGENT_DEFAULT_AGENT.',
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(100)
  agent_id?: string;

  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  title?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, example: {} })
  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: () => InitialMessage,
    description:
      "The session's first message: it and its queued run are written with the session, in one transaction; the response then carries `run_id`.",
  })
  @IsOptional()
  @ValidateNested()
  @Type(() => InitialMessage)
  message?: InitialMessage;
}

/** The replacement message of a fork ("edit and resend"): the content of a user message. */
export class ForkMessage {
  @ApiProperty({ type: [TextPart] })
  @IsArray()
  @ArrayMinSize(1, { message: 'content must hold at least one text part' })
  @ArrayMaxSize(32)
  @ValidateNested({ each: true })
  @Type(() => TextPart)
  content!: TextPart[];
}

/** `POST /v1/sessions/{id}/fork` (issue 33). */
export class ForkSessionBody {
  @ApiPropertyOptional({
    minimum: 1,
    description:
      "The parent's sequence to fork at (default: the end of its log). With `message`, the sequence of the user message the fork replaces.",
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  at_sequence?: number;

  @ApiPropertyOptional({
    type: ForkMessage,
    description: 'Edit and resend: replaces the user message at `at_sequence`; the fork runs it at once.',
  })
  @IsOptional()
  @ValidateNested()
  @Type(() => ForkMessage)
  message?: ForkMessage;
}

export class CancelRunBody {
  @ApiPropertyOptional({ maxLength: 1000 })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  reason?: string;
}

export class ResolveApprovalBody {
  @ApiProperty({
    enum: ['approve_once', 'approve_with_edits', 'deny'],
    description:
      'approve_with_edits: the tool runs with `arguments` instead of the proposed ones (docs/tools-and-approvals.md)',
  })
  @IsIn(['approve_once', 'approve_with_edits', 'deny'], {
    message: 'decision must be one of approve_once, approve_with_edits, deny',
  })
  decision!: 'approve_once' | 'approve_with_edits' | 'deny';

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { target: 'the newsletter', text: 'hello, world' },
    description:
      "With approve_with_edits only: the complete edited tool arguments, checked against the tool's schema and the policy",
  })
  @IsOptional()
  @IsObject({ message: 'arguments must be a JSON object' })
  arguments?: Record<string, unknown>;

  @ApiPropertyOptional({ maxLength: 2000 })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  reason?: string;
}

export class PageQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 200, default: 50 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(200)
  limit?: number;

  @ApiPropertyOptional({ description: 'Opaque cursor from the previous page (next_cursor).' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  cursor?: string;
}

export class SessionListQuery extends PageQuery {
  @ApiPropertyOptional({
    maxLength: 200,
    description: 'Words to find in session titles and message text (PostgreSQL full-text search, prefix matching).',
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  q?: string;
}

export class RenameSessionBody {
  @ApiProperty({ minLength: 1, maxLength: 500, example: 'Quarterly report' })
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  title!: string;
}

export class ApprovalListQuery extends PageQuery {
  @ApiPropertyOptional({ enum: ['pending', 'resolved'] })
  @IsOptional()
  @IsIn(['pending', 'resolved'])
  status?: 'pending' | 'resolved';
}

export class StreamQuery {
  @ApiPropertyOptional({ description: 'For clients that cannot send the Last-Event-ID header.' })
  @IsOptional()
  @Matches(/^\d{1,15}$/, { message: 'last_event_id must be a non-negative integer' })
  last_event_id?: string;
}

export class NotificationStreamQuery {
  @ApiPropertyOptional({
    description: 'For clients that cannot send the Last-Event-ID header: `<transaction>-<position>`.',
  })
  @IsOptional()
  @Matches(/^\d{1,20}-\d{1,19}$/, {
    message: 'last_event_id must be a notification stream id (<transaction>-<position>)',
  })
  last_event_id?: string;
}

export class RegisterWebhookBody {
  @ApiProperty({
    maxLength: 2000,
    description: 'http(s) URL; private addresses refused unless WEBHOOK_ALLOW_PRIVATE=1',
  })
  @IsString()
  @MaxLength(2000)
  url!: string;

  @ApiProperty({ type: [String], example: ['approval.requested'] })
  @IsArray()
  @ArrayMaxSize(20)
  @IsString({ each: true })
  kinds!: string[];
}

/** `POST /v1/notifications` (issue 31 item 2): an external producer's notification; checked whole by its decider. */
export class PostNotificationBody {
  @ApiProperty({ description: 'the recipient principal (of the caller’s tenant)', maxLength: 200, example: 'alice' })
  @IsString()
  @MaxLength(200)
  recipient!: string;

  @ApiProperty({ description: 'a notification kind (`external.notice` for anything else)', example: 'external.notice' })
  @IsString()
  @MaxLength(100)
  kind!: string;

  @ApiProperty({
    type: 'object',
    required: ['title'],
    properties: { title: { type: 'string', maxLength: 200 } },
    additionalProperties: { type: 'string', maxLength: 500 },
    example: { title: 'The nightly export finished', source: 'exporter' },
    description: 'shown as given (at most 16 string fields); keep it content-free',
  })
  @IsObject()
  summary!: Record<string, unknown>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', maxLength: 2000 },
    example: { details: 'https://exporter.example.com/runs/42' },
    description: 'name → absolute path or http(s) URL (at most 16)',
  })
  @IsOptional()
  @IsObject()
  links?: Record<string, unknown>;
}

/** `POST /v1/devices` (issue 31 item 5); the key is parsed by the registry. */
export class RegisterDeviceBody {
  @ApiProperty({ maxLength: 100, example: 'Alice’s phone' })
  @IsString()
  @MaxLength(100)
  name!: string;

  @ApiProperty({
    maxLength: 4096,
    description: 'a PEM "PUBLIC KEY" or the base64 DER SPKI of an EC P-256/P-384 or Ed25519 key',
    example: 'MCowBQYDK2VwAyEA…',
  })
  @IsString()
  @MaxLength(4096)
  public_key!: string;
}

/** `PUT /v1/notifications/preferences` (issue 31 item 4); checked whole by the domain's parser. */
export class NotificationPreferencesBody {
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', enum: ['inbox', 'webhook', 'both', 'none'] },
    example: { 'approval.requested': 'both', 'run.failed': 'inbox' },
    description: 'kind → channel; kinds left out are `both`',
  })
  @IsOptional()
  @IsObject()
  kinds?: Record<string, unknown>;

  @ApiPropertyOptional({ enum: ['none', 'full'], description: '`none` (default): content-free summaries' })
  @IsOptional()
  @IsString()
  content?: string;

  @ApiPropertyOptional({
    type: 'object',
    nullable: true,
    required: ['start', 'end', 'zone'],
    properties: {
      start: { type: 'string', pattern: '^([01]\\d|2[0-3]):[0-5]\\d$', example: '22:00' },
      end: { type: 'string', pattern: '^([01]\\d|2[0-3]):[0-5]\\d$', example: '07:00' },
      zone: { type: 'string', example: 'Europe/Berlin' },
    },
    description: 'webhook deliveries wait while the local time in `zone` is in [start, end); null: none',
  })
  @IsOptional()
  @IsObject()
  quiet_hours?: Record<string, unknown> | null;
}
