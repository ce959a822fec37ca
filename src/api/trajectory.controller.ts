import { ApiErrors, ApiSuccess } from './openapi';
import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put } from '@nestjs/common';
import { ApiOperation, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsIn, IsInt, IsISO8601, IsOptional, IsString, IsUUID, Max, MaxLength, Min } from 'class-validator';
import type { Trajectories } from '../composition/trajectory';
import type { Principal } from '../domain/principal';
import type { ConsentChange, ConsentRecord, ExportStatusFilter, TrajectoryExportJob } from '../ports/trajectory';
import { Auth, RequireScope } from './auth/decorators';
import { uuidParam } from './validation';

export const TRAJECTORIES = Symbol('Trajectories');

/** `POST /v1/exports`: the filters of `agent trajectory export`; the export covers the caller's tenant. */
export class CreateExportBody {
  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID()
  session_id?: string;

  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID()
  run_id?: string;

  @ApiPropertyOptional({ example: '2026-11-30T00:00:00Z', description: 'runs that ended at or after it' })
  @IsOptional()
  @IsISO8601()
  since?: string;

  @ApiPropertyOptional({ enum: ['completed', 'failed', 'all'], default: 'all' })
  @IsOptional()
  @IsIn(['completed', 'failed', 'all'])
  status?: ExportStatusFilter;

  @ApiPropertyOptional({ description: 'resume after the cursor of an earlier export summary' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  cursor?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 1_000_000 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  limit?: number;
}

function presentJob(j: TrajectoryExportJob) {
  const s = j.summary;
  return {
    id: j.id,
    status: j.status,
    filters: {
      session_id: j.filters.sessionId ?? null,
      run_id: j.filters.runId ?? null,
      since: j.filters.since ?? null,
      status: j.filters.status,
      cursor: j.filters.cursor ?? null,
      limit: j.filters.limit ?? null,
    },
    artifact_id: j.artifactId,
    content_url: j.artifactId ? `/v1/artifacts/${j.artifactId}/content` : null,
    summary: s
      ? {
          scanned: s.scanned,
          exported: s.exported,
          skipped_no_consent: s.skippedNoConsent,
          succeeded: s.byLabel.succeeded,
          failed: s.byLabel.failed,
          redactions: s.redactions,
          bytes: s.bytes,
          cursor: s.cursor,
          held_back: s.heldBack,
        }
      : null,
    error: j.error,
    created_at: j.createdAt,
    finished_at: j.finishedAt,
  };
}

function presentConsent(r: ConsentRecord, change?: ConsentChange) {
  return {
    principal_id: r.principalId,
    status: r.status,
    version: r.version,
    changed_at: r.changedAt,
    changed_by: r.changedBy,
    ...(change ? { exports_deleted: change.exportsDeleted } : {}),
  };
}

@ApiTags('trajectories')
@Controller('v1')
export class TrajectoryController {
  constructor(@Inject(TRAJECTORIES) private readonly t: Trajectories) {}

  @Post('exports')
  @HttpCode(202)
  @RequireScope('trajectories.export')
  @ApiOperation({
    summary: "Start a redacted, consent-gated trajectory export of the caller's tenant (202 + export id)",
  })
  @ApiSuccess(202, 'The export job (status queued)')
  @ApiErrors(400, 404, 413, 415)
  async create(@Auth() principal: Principal, @Body() body: CreateExportBody) {
    const job = await this.t.jobs.create(principal.tenantId, principal.principalId, {
      sessionId: body.session_id,
      runId: body.run_id,
      since: body.since,
      status: body.status ?? 'all',
      cursor: body.cursor,
      limit: body.limit,
    });
    return presentJob(job);
  }

  @Get('exports/:id')
  @RequireScope('trajectories.export')
  @ApiOperation({ summary: 'Export status; when succeeded, the artifact holding the JSON Lines' })
  @ApiSuccess(200, 'The export job')
  @ApiErrors(400, 404)
  async get(@Auth() principal: Principal, @Param('id', uuidParam('export_id')) id: string) {
    return presentJob(await this.t.jobs.get(principal.tenantId, id));
  }

  @Get('consent/trajectory')
  @RequireScope('consent.manage')
  @ApiOperation({ summary: "The caller's trajectory-export consent" })
  @ApiSuccess(200, 'The consent record')
  async ownConsent(@Auth() principal: Principal) {
    return presentConsent(await this.t.consent.get(principal.tenantId, principal.principalId));
  }

  @Put('consent/trajectory')
  @RequireScope('consent.manage')
  @ApiOperation({ summary: "Grant the caller's consent (runs started from now on may be exported)" })
  @ApiSuccess(200, 'The consent record')
  async grantOwn(@Auth() principal: Principal) {
    const c = await this.t.consent.grant(principal.tenantId, principal.principalId, principal.principalId);
    return presentConsent(c.record, c);
  }

  @Delete('consent/trajectory')
  @RequireScope('consent.manage')
  @ApiOperation({ summary: "Withdraw the caller's consent; deletes stored exports that contain its runs" })
  @ApiSuccess(200, 'The consent record and exports_deleted')
  async withdrawOwn(@Auth() principal: Principal) {
    const c = await this.t.consent.withdraw(principal.tenantId, principal.principalId, principal.principalId);
    return presentConsent(c.record, c);
  }

  @Get('consent/trajectory/principals/:principal_id')
  @RequireScope('consent.admin')
  @ApiOperation({ summary: "Admin: a principal's trajectory-export consent in the caller's tenant" })
  @ApiSuccess(200, 'The consent record')
  @ApiErrors(400)
  async consentOf(@Auth() principal: Principal, @Param('principal_id') id: string) {
    return presentConsent(await this.t.consent.get(principal.tenantId, id));
  }

  @Put('consent/trajectory/principals/:principal_id')
  @RequireScope('consent.admin')
  @ApiOperation({ summary: "Admin: record a principal's consent" })
  @ApiSuccess(200, 'The consent record')
  @ApiErrors(400)
  async grantFor(@Auth() principal: Principal, @Param('principal_id') id: string) {
    const c = await this.t.consent.grant(principal.tenantId, id, `admin:${principal.principalId}`);
    return presentConsent(c.record, c);
  }

  @Delete('consent/trajectory/principals/:principal_id')
  @RequireScope('consent.admin')
  @ApiOperation({ summary: "Admin: withdraw a principal's consent; deletes stored exports that contain its runs" })
  @ApiSuccess(200, 'The consent record and exports_deleted')
  @ApiErrors(400)
  async withdrawFor(@Auth() principal: Principal, @Param('principal_id') id: string) {
    const c = await this.t.consent.withdraw(principal.tenantId, id, `admin:${principal.principalId}`);
    return presentConsent(c.record, c);
  }
}
