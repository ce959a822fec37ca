import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsArray, IsIn, IsInt, IsObject, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { SCHEDULE_STATUSES } from '../../domain/schedules/schedule';
import { PageQuery } from './requests';

const CADENCE_DOC =
  'One of {kind:"once", at:"2027-03-28T02:30", time_zone} | {kind:"once", in_seconds} | {kind:"daily", time:"08:00", time_zone} | ' +
  '{kind:"weekly", days:["mon","fri"], time, time_zone} | {kind:"monthly", day:1-31|"last", time, time_zone} | ' +
  '{kind:"yearly", month, day, time, time_zone} | {kind:"cron", expression:"0 8 * * 1-5", time_zone} (docs/schedules.md)';

/**
 * `POST /v1/schedules`. The cadence, limits and scopes are checked by the schedule service (one
 * validation for the API, the CLI and the schedule tools), which names the field it refuses.
 */
export class CreateScheduleBody {
  @ApiProperty({ example: 'What is 2 plus 2?', description: 'The message each occurrence submits' })
  @IsString()
  message!: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: CADENCE_DOC })
  @IsObject()
  cadence!: Record<string, unknown>;

  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @IsString()
  title?: string;

  @ApiPropertyOptional({ description: 'Pinned at its current version; default AGENT_DEFAULT_AGENT' })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  agent_id?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description:
      'Overrides of the agent limits: max_steps, max_model_calls, max_tool_calls, max_cost, deadline_seconds',
  })
  @IsOptional()
  @IsObject()
  limits?: Record<string, unknown>;

  @ApiPropertyOptional({ type: [String], description: "Requested scopes (default: the creator's execution scopes)" })
  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  scopes?: string[];

  @ApiPropertyOptional({ enum: ['run_once', 'skip'], description: 'After downtime: one catch-up run, or none' })
  @IsOptional()
  @IsString()
  misfire?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 3 })
  @IsOptional()
  @IsInt()
  max_consecutive_failures?: number;
}

/** `PATCH /v1/schedules/{id}`: a new revision; the agent and the scopes stay pinned. */
export class UpdateScheduleBody {
  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  message?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: CADENCE_DOC })
  @IsOptional()
  @IsObject()
  cadence?: Record<string, unknown>;

  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @IsString()
  title?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  @IsOptional()
  @IsObject()
  limits?: Record<string, unknown>;

  @ApiPropertyOptional({ enum: ['run_once', 'skip'] })
  @IsOptional()
  @IsString()
  misfire?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 100 })
  @IsOptional()
  @IsInt()
  max_consecutive_failures?: number;

  @ApiPropertyOptional({ minimum: 1, description: 'The revision edited; another one in between: 409' })
  @IsOptional()
  @IsInt()
  @Min(1)
  expected_revision?: number;
}

export class CancelScheduleQuery {
  @ApiPropertyOptional({ maxLength: 1000 })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  reason?: string;
}

export class ScheduleListQuery extends PageQuery {
  @ApiPropertyOptional({ enum: SCHEDULE_STATUSES })
  @IsOptional()
  @IsIn(SCHEDULE_STATUSES)
  status?: string;
}

export class OccurrenceListQuery {
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
