import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiTags } from '@nestjs/swagger';
import { cadenceToWire } from '../application/schedules/schedule-input';
import type { ScheduleService } from '../application/schedules/schedule-service';
import type { ScheduleView } from '../application/schedules/schedule-view';
import type { Principal } from '../domain/principal';
import type { OccurrenceRecord } from '../ports/schedules';
import { Auth, RequireScope } from './auth/decorators';
import {
  CancelScheduleQuery,
  CreateScheduleBody,
  OccurrenceListQuery,
  ScheduleListQuery,
  UpdateScheduleBody,
} from './dto/schedules';
import { ApiErrors, ApiSuccess } from './openapi';
import { presentPage } from './presenters';
import { uuidParam } from './validation';

export const SCHEDULE_SERVICE = Symbol('ScheduleService');

/** A schedule as wire JSON: `next_fire_at` in UTC and in the schedule's own zone (`next_fire_at_local`). */
export const presentSchedule = (s: ScheduleView) => ({
  id: s.id,
  status: s.status,
  revision: s.revision,
  title: s.title,
  message: s.message,
  cadence: cadenceToWire(s.cadence),
  cadence_description: s.cadenceDescription,
  time_zone: s.timeZone,
  next_fire_at: s.nextFireAt,
  next_fire_at_local: s.nextFireAtLocal,
  agent_id: s.agentId,
  agent_version: s.agentVersion,
  scopes: s.scopes,
  limits: {
    max_steps: s.limits.maxSteps,
    max_model_calls: s.limits.maxModelCalls,
    max_tool_calls: s.limits.maxToolCalls,
    max_input_tokens: s.limits.maxInputTokens,
    max_output_tokens: s.limits.maxOutputTokens,
    max_cost: s.limits.maxCost,
    deadline_seconds: s.limits.deadlineSeconds,
  },
  misfire: s.misfire,
  max_consecutive_failures: s.maxConsecutiveFailures,
  consecutive_failures: s.consecutiveFailures,
  occurrence_count: s.occurrenceCount,
  last_nominal_at: s.lastNominalAt,
  last_run_id: s.lastRunId,
  last_session_id: s.lastSessionId,
  paused_reason: s.pausedReason,
  created_at: s.createdAt,
  updated_at: s.updatedAt,
});

export const presentOccurrence = (o: OccurrenceRecord) => ({
  id: o.id,
  nominal_at: o.nominalAt,
  fired_at: o.firedAt,
  status: o.status,
  run_id: o.runId,
  session_id: o.sessionId,
  run_status: o.runStatus,
  revision: o.revision,
  missed_count: o.missedCount,
  reason: o.reason,
  message: o.message,
});

/**
 * Schedules (issue 29, ADR 0034): versioned, principal-scoped, fired by the scheduler role as
 * ordinary durable runs. Another principal's schedule is 404.
 */
@ApiTags('schedules')
@Controller('v1/schedules')
export class SchedulesController {
  constructor(@Inject(SCHEDULE_SERVICE) private readonly schedules: ScheduleService) {}

  @Post()
  @HttpCode(201)
  @RequireScope('schedules.write')
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'Same key and body: the original schedule; same key, other body: 409',
  })
  @ApiOperation({ summary: 'Creates a schedule; its first revision, active, with its next firing' })
  @ApiSuccess(201, 'The schedule: {id, status: "active", next_fire_at, next_fire_at_local, …}')
  @ApiErrors(400, 404, 409, 413, 415)
  async create(
    @Auth() principal: Principal,
    @Body() body: CreateScheduleBody,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
  ) {
    const r = await this.schedules.create(principal, body, { idempotencyKey: idempotencyKey ?? null });
    return presentSchedule(r.schedule);
  }

  @Get()
  @RequireScope('schedules.read')
  @ApiOperation({ summary: "The caller's schedules, newest first" })
  @ApiSuccess(200, '{items, next_cursor}')
  @ApiErrors(400)
  async list(@Auth() principal: Principal, @Query() q: ScheduleListQuery) {
    return presentPage(
      await this.schedules.list(principal, q.limit ?? 50, q.cursor ?? null, q.status ?? null),
      presentSchedule,
    );
  }

  @Get(':id')
  @RequireScope('schedules.read')
  @ApiOperation({ summary: 'One schedule, with its next firing in UTC and in its own zone' })
  @ApiSuccess(200, 'The schedule')
  @ApiErrors(400, 404)
  async get(@Auth() principal: Principal, @Param('id', uuidParam('schedule_id')) id: string) {
    return presentSchedule(await this.schedules.get(principal, id));
  }

  @Patch(':id')
  @RequireScope('schedules.write')
  @ApiOperation({ summary: 'A new revision (message, title, cadence, limits, misfire): future occurrences only' })
  @ApiSuccess(200, 'The schedule at its new revision')
  @ApiErrors(400, 404, 409, 413, 415)
  async update(
    @Auth() principal: Principal,
    @Param('id', uuidParam('schedule_id')) id: string,
    @Body() body: UpdateScheduleBody,
  ) {
    const { expected_revision, ...patch } = body;
    return presentSchedule(await this.schedules.update(principal, id, patch, expected_revision ?? null));
  }

  @Delete(':id')
  @RequireScope('schedules.write')
  @ApiOperation({ summary: 'Cancels the schedule (terminal); runs already started are not cancelled' })
  @ApiSuccess(200, 'The cancelled schedule')
  @ApiErrors(400, 404, 409)
  async cancel(
    @Auth() principal: Principal,
    @Param('id', uuidParam('schedule_id')) id: string,
    @Query() q: CancelScheduleQuery,
  ) {
    return presentSchedule(await this.schedules.cancel(principal, id, q.reason ?? null));
  }

  @Post(':id/pause')
  @HttpCode(200)
  @RequireScope('schedules.write')
  @ApiOperation({ summary: 'Pauses the schedule (no firing until resumed; pausing never backfills)' })
  @ApiSuccess(200, 'The paused schedule')
  @ApiErrors(400, 404, 409)
  async pause(@Auth() principal: Principal, @Param('id', uuidParam('schedule_id')) id: string) {
    return presentSchedule(await this.schedules.pause(principal, id));
  }

  @Post(':id/resume')
  @HttpCode(200)
  @RequireScope('schedules.write')
  @ApiOperation({ summary: 'Resumes the schedule; its next firing is the first instant after now' })
  @ApiSuccess(200, 'The active schedule')
  @ApiErrors(400, 404, 409)
  async resume(@Auth() principal: Principal, @Param('id', uuidParam('schedule_id')) id: string) {
    return presentSchedule(await this.schedules.resume(principal, id));
  }

  @Get(':id/occurrences')
  @RequireScope('schedules.read')
  @ApiOperation({ summary: 'The occurrence ledger: newest nominal instant first, each with its run' })
  @ApiSuccess(200, '{items: [{nominal_at, fired_at, status, run_id, …}], next_cursor}')
  @ApiErrors(400, 404)
  async occurrences(
    @Auth() principal: Principal,
    @Param('id', uuidParam('schedule_id')) id: string,
    @Query() q: OccurrenceListQuery,
  ) {
    return presentPage(
      await this.schedules.occurrences(principal, id, q.limit ?? 50, q.cursor ?? null),
      presentOccurrence,
    );
  }
}
