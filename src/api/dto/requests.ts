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

/** Request bodies and query strings of /v1. Field names are the wire's snake_case; unknown fields are refused. */
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
}

export class TextPart {
  @ApiProperty({ enum: ['text'] })
  @IsIn(['text'])
  type!: 'text';

  @ApiProperty({ example: 'What is 17 multiplied by 23?' })
  @IsString()
  @Matches(/\S/, { message: 'text must not be empty' })
  text!: string;
}

export class MessageBody {
  @ApiProperty({ type: [TextPart] })
  @IsArray()
  @ArrayMinSize(1, { message: 'content must hold at least one text part' })
  @ArrayMaxSize(32)
  @ValidateNested({ each: true })
  @Type(() => TextPart)
  content!: TextPart[];
}

export class CancelRunBody {
  @ApiPropertyOptional({ maxLength: 1000 })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  reason?: string;
}

export class ResolveApprovalBody {
  @ApiProperty({ enum: ['approve_once', 'deny'] })
  @IsIn(['approve_once', 'deny'])
  decision!: 'approve_once' | 'deny';

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
