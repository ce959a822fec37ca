import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { NotFoundError, ValidationError } from '../domain/errors';
import { injectionIn } from '../domain/memory/memory-record';
import type { Principal } from '../domain/principal';
import type { MemoryDetail, MemoryRecord, MemoryStore } from '../ports/memory-records';
import { Auth, RequireScope } from './auth/decorators';
import { EditMemoryBody, MemoryListQuery } from './dto/memories';
import { ApiErrors, ApiSuccess } from './openapi';
import { presentPage } from './presenters';
import { uuidParam } from './validation';

export const MEMORY_STORE = Symbol('MemoryStore');

export function presentMemory(m: MemoryRecord) {
  return {
    id: m.id,
    subject: m.subject,
    statement: m.statement,
    scope: m.scope,
    agent_id: m.agentId,
    status: m.status,
    confidence: m.confidence,
    sensitivity: m.sensitivity,
    trust: m.trust,
    attribution: m.attribution,
    source_event_ids: m.sourceEventIds,
    source_session_id: m.sourceSessionId,
    source_run_id: m.sourceRunId,
    owner_principal_id: m.ownerPrincipalId,
    valid_from: m.validFrom,
    expires_at: m.expiresAt,
    superseded_by: m.supersededBy,
    conflicts_with: m.conflictsWith,
    question: m.question,
    reinforcements: m.reinforcements,
    revision: m.revision,
    // The injection scan that blocks a memory at load, shown here so a person can fix or delete it.
    flagged: m.subject !== null && m.statement !== null && injectionIn(m.subject, m.statement).length > 0,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
    updated_by: m.updatedBy,
  };
}

function presentDetail(d: MemoryDetail) {
  return {
    ...presentMemory(d.record),
    source_events: d.sourceEvents.map((e) => ({
      id: e.id,
      session_id: e.sessionId,
      sequence: e.sequence,
      type: e.type,
      run_id: e.runId,
    })),
    used_by: d.usedBy.map((u) => ({
      retrieval_id: u.retrievalId,
      session_id: u.sessionId,
      run_id: u.runId,
      purpose: u.purpose,
      score: u.score,
      created_at: u.createdAt,
    })),
  };
}

/**
 * What the agent remembers (issue 30, ADR 0035): list, read, edit and delete one's memories.
 * Another principal's (or tenant's) memory is not found; a user's edit is recorded with the user as
 * actor; a deletion erases the statement from the projection and from every event that carried it.
 */
@ApiTags('memories')
@Controller('v1/memories')
export class MemoriesController {
  constructor(@Inject(MEMORY_STORE) private readonly memories: MemoryStore) {}

  @Get()
  @RequireScope('memory.read')
  @ApiOperation({ summary: "The principal's memories (and the tenant-wide ones), newest change first" })
  @ApiSuccess(200, '{items, next_cursor}')
  @ApiErrors(400)
  async list(@Auth() principal: Principal, @Query() q: MemoryListQuery) {
    const page = await this.memories.list(principal, {
      subject: q.subject,
      scope: q.scope,
      status: q.status,
      q: q.q,
      limit: q.limit ?? 50,
      cursor: q.cursor ?? null,
    });
    return presentPage(page, presentMemory);
  }

  @Get(':id')
  @RequireScope('memory.read')
  @ApiOperation({ summary: 'One memory with its source events and the runs that used it' })
  @ApiSuccess(200, 'The memory')
  @ApiErrors(400, 404)
  async get(@Auth() principal: Principal, @Param('id', uuidParam('memory_id')) id: string) {
    const d = await this.memories.get(principal, id);
    if (!d) throw new NotFoundError(`memory ${id} does not exist`, { memoryId: id });
    return presentDetail(d);
  }

  @Patch(':id')
  @RequireScope('memory.write')
  @ApiOperation({ summary: 'Edits a memory (recorded as memory.updated with the user as actor)' })
  @ApiSuccess(200, 'The memory as edited')
  @ApiErrors(400, 404, 413, 415)
  async edit(
    @Auth() principal: Principal,
    @Param('id', uuidParam('memory_id')) id: string,
    @Body() body: EditMemoryBody,
  ) {
    const changes = {
      ...(body.statement !== undefined ? { statement: body.statement } : {}),
      ...(body.subject !== undefined ? { subject: body.subject } : {}),
      ...(body.sensitivity !== undefined ? { sensitivity: body.sensitivity } : {}),
      ...(body.confidence !== undefined ? { confidence: body.confidence } : {}),
      ...(body.expires_at !== undefined ? { expiresAt: body.expires_at } : {}),
      ...(body.status !== undefined ? { status: body.status } : {}),
    };
    if (Object.keys(changes).length === 0)
      throw new ValidationError(
        'nothing to change: give statement, subject, sensitivity, confidence, expires_at or status',
      );
    return presentMemory(await this.memories.edit(principal, id, changes));
  }

  @Delete(':id')
  @HttpCode(204)
  @RequireScope('memory.write')
  @ApiOperation({ summary: 'Deletes a memory: its statement is erased from the projection and every event' })
  @ApiSuccess(204, 'Deleted')
  @ApiErrors(400, 404)
  async remove(@Auth() principal: Principal, @Param('id', uuidParam('memory_id')) id: string) {
    await this.memories.forget(principal, id, { actorType: 'user', actorId: principal.principalId });
  }
}
