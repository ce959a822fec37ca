import { ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsIn,
  IsISO8601,
  IsNumber,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateIf,
} from 'class-validator';
import { MEMORY_SCOPES, MEMORY_SENSITIVITIES, MEMORY_STATUSES } from '../../domain/memory/memory-record';
import { PageQuery } from './requests';

/** `GET /v1/memories` filters (issue 30). */
export class MemoryListQuery extends PageQuery {
  @ApiPropertyOptional({ maxLength: 200, description: 'Part of the subject (case-insensitive).' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  subject?: string;

  @ApiPropertyOptional({ enum: MEMORY_SCOPES })
  @IsOptional()
  @IsIn(MEMORY_SCOPES)
  scope?: (typeof MEMORY_SCOPES)[number];

  @ApiPropertyOptional({ enum: MEMORY_STATUSES, description: 'Default: every status but deleted.' })
  @IsOptional()
  @IsIn(MEMORY_STATUSES)
  status?: (typeof MEMORY_STATUSES)[number];

  @ApiPropertyOptional({ maxLength: 200, description: 'Words to find in subject and statement (full-text search).' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  q?: string;
}

/** `PATCH /v1/memories/{id}`: a user's edit (recorded with the user as actor). */
export class EditMemoryBody {
  @ApiPropertyOptional({ minLength: 1, maxLength: 2000 })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(2000)
  statement?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 200 })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  subject?: string;

  @ApiPropertyOptional({ enum: MEMORY_SENSITIVITIES })
  @IsOptional()
  @IsIn(MEMORY_SENSITIVITIES)
  sensitivity?: (typeof MEMORY_SENSITIVITIES)[number];

  @ApiPropertyOptional({ minimum: 0, maximum: 1 })
  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  confidence?: number;

  @ApiPropertyOptional({ nullable: true, description: 'ISO-8601 time, or null for no expiry.' })
  @IsOptional()
  @ValidateIf((_, v) => v !== null)
  @IsISO8601()
  expires_at?: string | null;

  @ApiPropertyOptional({ enum: ['active'], description: 'active confirms a conflicting or tentative memory.' })
  @IsOptional()
  @IsIn(['active'])
  status?: 'active';
}
