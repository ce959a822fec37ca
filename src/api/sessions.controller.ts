import { ApiErrors, ApiSuccess } from './openapi';
import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiHeader, ApiOperation, ApiTags } from '@nestjs/swagger';
import { SubmitMessageCommand } from '../application/runs/submit-message';
import { GetRunQuery } from '../application/runs/queries';
import { CreateSessionCommand } from '../application/sessions/create-session';
import { ForkSessionCommand } from '../application/sessions/fork-session';
import { DeleteSessionCommand } from '../application/sessions/delete-session';
import { RenameSessionCommand } from '../application/sessions/rename-session';
import {
  CountActiveRunsQuery,
  FindSubmissionQuery,
  GetForkTreeQuery,
  GetSessionQuery,
  ListMessagesQuery,
  ListSessionsQuery,
} from '../application/sessions/queries';
import type { Principal } from '../domain/principal';
import { API_SETTINGS, type ApiSettings } from './api-tokens';
import { Auth, RequireScope } from './auth/decorators';
import {
  CreateSessionBody,
  ForkSessionBody,
  MessageBody,
  MessageQuery,
  PageQuery,
  RenameSessionBody,
  SessionListQuery,
} from './dto/requests';
import { ValidationError } from '../domain/errors';
import { isInterruptMode } from '../domain/run/multitask';
import { RateLimitedError } from './errors';
import { presentCreatedSession, presentForkNode, presentMessage, presentPage, presentSession } from './presenters';
import { deliverRunInput } from './deferred-commands';
import { uuidParam } from './validation';

@ApiTags('sessions')
@Controller('v1/sessions')
export class SessionsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
  ) {}

  @Post()
  @HttpCode(201)
  @RequireScope('sessions.write')
  @ApiOperation({
    summary:
      'Create a session bound to the current version of an agent; with `message`, its first message and run are written with it (one transaction)',
  })
  @ApiSuccess(201, 'The session: {id, status, agent_id, agent_version, run_id?}; `run_id`: the queued run of `message`')
  @ApiErrors(400, 404, 413, 415, 429)
  async create(@Auth() principal: Principal, @Body() body: CreateSessionBody) {
    const text = body.message ? body.message.content.map((p) => p.text).join('\n\n') : null;
    if (text !== null) await this.checkActiveRunCeiling(principal);
    const s = await this.commands.execute(
      new CreateSessionCommand(
        principal,
        body.agent_id ?? null,
        body.title ?? null,
        body.metadata ?? {},
        text === null ? null : { text },
      ),
    );
    return presentCreatedSession(s);
  }

  @Get()
  @RequireScope('sessions.read')
  @ApiOperation({
    summary: "The principal's sessions, newest activity first (keyset pages); `q` searches titles and message text",
  })
  @ApiSuccess(200, '{items, next_cursor}')
  @ApiErrors(400)
  async list(@Auth() principal: Principal, @Query() q: SessionListQuery) {
    const search = q.q?.trim() ? q.q.trim() : null;
    return presentPage(
      await this.queries.execute(new ListSessionsQuery(principal, q.limit ?? 50, q.cursor ?? null, search)),
      presentSession,
    );
  }

  @Get(':id')
  @RequireScope('sessions.read')
  @ApiOperation({ summary: 'One session of the principal' })
  @ApiSuccess(200, 'The session')
  @ApiErrors(400, 404)
  async get(@Auth() principal: Principal, @Param('id', uuidParam('session_id')) id: string) {
    return presentSession(await this.queries.execute(new GetSessionQuery(principal, id)));
  }

  @Patch(':id')
  @RequireScope('sessions.write')
  @ApiOperation({ summary: 'Rename a session (its title; a session is first titled from its first message)' })
  @ApiSuccess(200, 'The session as renamed')
  @ApiErrors(400, 404, 409, 413, 415)
  async rename(
    @Auth() principal: Principal,
    @Param('id', uuidParam('session_id')) id: string,
    @Body() body: RenameSessionBody,
  ) {
    return presentSession(await this.commands.execute(new RenameSessionCommand(principal, id, body.title)));
  }

  @Delete(':id')
  @HttpCode(204)
  @RequireScope('sessions.write')
  @ApiOperation({ summary: 'Delete a session (409 while a run is not terminal; repeating it is 204)' })
  @ApiSuccess(204, 'Deleted (also when it already was)')
  @ApiErrors(400, 404, 409)
  async remove(@Auth() principal: Principal, @Param('id', uuidParam('session_id')) id: string): Promise<void> {
    await this.commands.execute(new DeleteSessionCommand(principal, id));
  }

  @Post(':id/fork')
  @HttpCode(201)
  @RequireScope('sessions.write')
  @ApiOperation({
    summary:
      "Fork a session at a sequence of its log (default: the end): a new session whose history is the parent's up to that point, by reference; with `message`, the user message there is replaced and run",
  })
  @ApiSuccess(201, '{id, parent_session_id, at_sequence, run_id?}')
  @ApiErrors(400, 404, 413, 415)
  async fork(
    @Auth() principal: Principal,
    @Param('id', uuidParam('session_id')) id: string,
    @Body() body: ForkSessionBody,
  ) {
    const text = body.message ? body.message.content.map((p) => p.text).join('\n\n') : null;
    const f = await this.commands.execute(new ForkSessionCommand(principal, id, body.at_sequence ?? null, text));
    return {
      id: f.id,
      parent_session_id: f.parentSessionId,
      at_sequence: f.atSequence,
      ...(f.runId === null ? {} : { run_id: f.runId }),
    };
  }

  @Get(':id/tree')
  @RequireScope('sessions.read')
  @ApiOperation({
    summary: "The fork tree a session belongs to: its root and every fork below it, with each fork's point",
  })
  @ApiSuccess(200, '{root: {id, title, parent_session_id, forked_at_sequence, created_at, children: […]}}')
  @ApiErrors(400, 404)
  async tree(@Auth() principal: Principal, @Param('id', uuidParam('session_id')) id: string) {
    return { root: presentForkNode(await this.queries.execute(new GetForkTreeQuery(principal, id))) };
  }

  @Get(':id/messages')
  @RequireScope('sessions.read')
  @ApiOperation({ summary: 'User and completed assistant messages, oldest first (keyset pages)' })
  @ApiSuccess(200, '{items, next_cursor}: user and completed assistant messages')
  @ApiErrors(400, 404)
  async messages(
    @Auth() principal: Principal,
    @Param('id', uuidParam('session_id')) id: string,
    @Query() q: PageQuery,
  ) {
    return presentPage(
      await this.queries.execute(new ListMessagesQuery(principal, id, q.limit ?? 100, q.cursor ?? null)),
      presentMessage,
    );
  }

  @Post(':id/messages')
  @HttpCode(202)
  @RequireScope('sessions.write')
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'Same key and body: the original run; same key, other body: 409',
  })
  @ApiOperation({
    summary:
      'Submit a message: starts one run (202), queues one behind a working run (multitask_strategy enqueue), or answers a run that is waiting for the user',
  })
  @ApiSuccess(
    202,
    '{run_id, status, position?}: the run (the original one for a repeated Idempotency-Key); `position` when it waits behind others',
  )
  @ApiErrors(400, 404, 409, 413, 415)
  async submit(
    @Auth() principal: Principal,
    @Param('id', uuidParam('session_id')) id: string,
    @Body() body: MessageBody,
    @Query() query: MessageQuery,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
  ) {
    const strategy = strategyOf(body, query);
    const text = body.content.map((p) => p.text).join('\n\n');
    // The session, a retry's recorded submission and the tenant's active runs are read together
    // (one round trip of latency, ADR 0053); the count is used only for a session with no active run.
    const ceiling = this.settings.maxActiveRunsPerTenant;
    const [session, retry, activeRuns] = await Promise.all([
      this.queries.execute(new GetSessionQuery(principal, id)),
      idempotencyKey ? this.queries.execute(new FindSubmissionQuery(principal, idempotencyKey)) : null,
      ceiling > 0 ? this.queries.execute(new CountActiveRunsQuery(principal)) : 0,
    ]);
    // Plan §27.3: text for a session whose latest run waits for the user is that run's input —
    // unless it is the retry of a submission already recorded under its Idempotency-Key, or the
    // request asks to interrupt that run (issue 33: the question is then left unanswered).
    if (session.activeRunId !== null && retry === null && !(strategy !== null && isInterruptMode(strategy))) {
      const active = await this.queries.execute(new GetRunQuery(principal, session.activeRunId));
      if (active.status === 'waiting_for_user') {
        const delivered = await deliverRunInput(this.commands, principal, active.id, text);
        return { run_id: active.id, status: delivered.status };
      }
    }
    if (session.activeRunId === null && retry === null) this.refuseOverCeiling(activeRuns);
    const r = await this.commands.execute(
      new SubmitMessageCommand(principal, id, text, idempotencyKey ?? null, {}, strategy, session),
    );
    return { run_id: r.runId, status: r.status, ...(r.position === null ? {} : { position: r.position }) };
  }

  /** 429 when the tenant already has `maxActiveRunsPerTenant` active runs (0: no ceiling). */
  private async checkActiveRunCeiling(principal: Principal): Promise<void> {
    if (this.settings.maxActiveRunsPerTenant > 0)
      this.refuseOverCeiling(await this.queries.execute(new CountActiveRunsQuery(principal)));
  }

  private refuseOverCeiling(activeRuns: number): void {
    const ceiling = this.settings.maxActiveRunsPerTenant;
    if (ceiling > 0 && activeRuns >= ceiling) {
      throw new RateLimitedError(`this tenant already has ${activeRuns} active runs (the ceiling is ${ceiling})`, 5, {
        activeRuns,
        ceiling,
      });
    }
  }
}

/** The strategy the body or the query string names (null: the agent's default); both: they must agree. */
function strategyOf(body: MessageBody, query: MessageQuery) {
  const b = body.multitask_strategy ?? null;
  const q = query.multitask_strategy ?? null;
  if (b !== null && q !== null && b !== q) {
    throw new ValidationError(`multitask_strategy is "${b}" in the body and "${q}" in the query string`, {
      field: 'multitask_strategy',
    });
  }
  return b ?? q;
}
