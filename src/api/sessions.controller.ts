import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiHeader, ApiOperation, ApiTags } from '@nestjs/swagger';
import { SubmitMessageCommand } from '../application/runs/submit-message';
import { GetRunQuery } from '../application/runs/queries';
import { CreateSessionCommand } from '../application/sessions/create-session';
import { DeleteSessionCommand } from '../application/sessions/delete-session';
import {
  CountActiveRunsQuery,
  FindSubmissionQuery,
  GetSessionQuery,
  ListMessagesQuery,
  ListSessionsQuery,
} from '../application/sessions/queries';
import type { Principal } from '../domain/principal';
import { API_SETTINGS, type ApiSettings } from './api-tokens';
import { Auth, RequireScope } from './auth/decorators';
import { CreateSessionBody, MessageBody, PageQuery } from './dto/requests';
import { RateLimitedError } from './errors';
import { presentCreatedSession, presentMessage, presentPage, presentSession } from './presenters';
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
  @ApiOperation({ summary: 'Create a session bound to the current version of an agent' })
  async create(@Auth() principal: Principal, @Body() body: CreateSessionBody) {
    const s = await this.commands.execute(
      new CreateSessionCommand(principal, body.agent_id ?? null, body.title ?? null, body.metadata ?? {}),
    );
    return presentCreatedSession(s);
  }

  @Get()
  @RequireScope('sessions.read')
  @ApiOperation({ summary: "The principal's sessions, newest activity first (keyset pages)" })
  async list(@Auth() principal: Principal, @Query() q: PageQuery) {
    return presentPage(
      await this.queries.execute(new ListSessionsQuery(principal, q.limit ?? 50, q.cursor ?? null)),
      presentSession,
    );
  }

  @Get(':id')
  @RequireScope('sessions.read')
  async get(@Auth() principal: Principal, @Param('id', uuidParam('session_id')) id: string) {
    return presentSession(await this.queries.execute(new GetSessionQuery(principal, id)));
  }

  @Delete(':id')
  @HttpCode(204)
  @RequireScope('sessions.write')
  @ApiOperation({ summary: 'Delete a session (409 while a run is not terminal; repeating it is 204)' })
  async remove(@Auth() principal: Principal, @Param('id', uuidParam('session_id')) id: string): Promise<void> {
    await this.commands.execute(new DeleteSessionCommand(principal, id));
  }

  @Get(':id/messages')
  @RequireScope('sessions.read')
  @ApiOperation({ summary: 'User and completed assistant messages, oldest first (keyset pages)' })
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
  @ApiOperation({ summary: 'Submit a message: starts one run (202), or answers a run that is waiting for the user' })
  async submit(
    @Auth() principal: Principal,
    @Param('id', uuidParam('session_id')) id: string,
    @Body() body: MessageBody,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
  ) {
    const text = body.content.map((p) => p.text).join('\n\n');
    const session = await this.queries.execute(new GetSessionQuery(principal, id));
    // Plan §27.3: text for a session whose latest run waits for the user is that run's input —
    // unless it is the retry of a submission already recorded under its Idempotency-Key.
    const retry = idempotencyKey
      ? await this.queries.execute(new FindSubmissionQuery(principal, idempotencyKey))
      : null;
    if (session.activeRunId !== null && retry === null) {
      const active = await this.queries.execute(new GetRunQuery(principal, session.activeRunId));
      if (active.status === 'waiting_for_user') {
        const delivered = await deliverRunInput(this.commands, principal, active.id, text);
        return { run_id: active.id, status: delivered.status };
      }
    }
    if (this.settings.maxActiveRunsPerTenant > 0 && session.activeRunId === null && retry === null) {
      const active = await this.queries.execute(new CountActiveRunsQuery(principal));
      if (active >= this.settings.maxActiveRunsPerTenant) {
        throw new RateLimitedError(
          `this tenant already has ${active} active runs (the ceiling is ${this.settings.maxActiveRunsPerTenant})`,
          5,
          {
            activeRuns: active,
            ceiling: this.settings.maxActiveRunsPerTenant,
          },
        );
      }
    }
    const r = await this.commands.execute(new SubmitMessageCommand(principal, id, text, idempotencyKey ?? null));
    return { run_id: r.runId, status: r.status };
  }
}
