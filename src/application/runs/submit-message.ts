import { createHash } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { ConflictError, NotFoundError, ValidationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { RunLimits } from '../../domain/run/limits';
import type { AgentCatalog } from '../../ports/agent-catalog';
import type { IdFactory } from '../../ports/clock';
import type { EventStore } from '../../ports/event-store';
import type { SessionRepository } from '../../ports/session-repository';
import {
  AGENT_CATALOG,
  APP_SETTINGS,
  EVENT_STORE,
  ID_FACTORY,
  SESSION_REPOSITORY,
  type ApplicationSettings,
} from '../tokens';

export interface SubmittedRun {
  readonly runId: string;
  readonly sessionId: string;
  readonly status: 'queued';
  /** True when an earlier submission with the same idempotency key was returned. */
  readonly replayed: boolean;
}

/** Trusted-caller overrides (CLI, eval harness); never accepted from the HTTP API. */
export interface RunOverrides {
  readonly modelPolicy?: string;
  readonly limits?: Partial<RunLimits>;
  readonly priority?: number;
}

export class SubmitMessageCommand extends Command<SubmittedRun> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly text: string,
    readonly idempotencyKey: string | null = null,
    readonly overrides: RunOverrides = {},
  ) {
    super();
  }
}

/** Submitting a message creates exactly one run (run == turn, plan §27.1). */
@CommandHandler(SubmitMessageCommand)
export class SubmitMessageHandler implements ICommandHandler<SubmitMessageCommand> {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(SESSION_REPOSITORY) private readonly sessions: SessionRepository,
    @Inject(AGENT_CATALOG) private readonly agents: AgentCatalog,
    @Inject(ID_FACTORY) private readonly ids: IdFactory,
    @Inject(APP_SETTINGS) private readonly settings: ApplicationSettings,
  ) {}

  async execute(cmd: SubmitMessageCommand): Promise<SubmittedRun> {
    const text = cmd.text;
    if (typeof text !== 'string' || text.trim() === '')
      throw new ValidationError('message text must not be empty', { field: 'text' });
    if (text.length > this.settings.maxMessageChars) {
      throw new ValidationError(
        `message text is ${text.length} characters; the limit is ${this.settings.maxMessageChars}`,
        { field: 'text' },
      );
    }
    if (cmd.idempotencyKey !== null && (cmd.idempotencyKey.length === 0 || cmd.idempotencyKey.length > 255)) {
      throw new ValidationError('Idempotency-Key must be 1 to 255 characters', { field: 'idempotency_key' });
    }
    const requestHash = createHash('sha256')
      .update(JSON.stringify([cmd.sessionId, text, cmd.overrides]))
      .digest('hex');
    if (cmd.idempotencyKey !== null) {
      const prior = await this.sessions.idempotentSubmission(cmd.principal, cmd.idempotencyKey);
      if (prior) return this.replay(prior, requestHash);
    }
    const session = await this.sessions.get(cmd.sessionId, cmd.principal);
    if (!session || session.status === 'deleted')
      throw new NotFoundError(`session ${cmd.sessionId} not found`, { sessionId: cmd.sessionId });
    const agent = await this.agents.get(session.agentId, session.agentVersion);
    if (!agent)
      throw new NotFoundError(`agent ${session.agentId} v${session.agentVersion} not found`, {
        agentId: session.agentId,
      });

    const runId = this.ids.uuid();
    const messageId = this.ids.uuid();
    try {
      await this.store.append(
        cmd.sessionId,
        [
          {
            type: 'user.message.created',
            runId,
            actorType: 'user',
            actorId: cmd.principal.principalId,
            data: { messageId, content: [{ type: 'text', text }] },
          },
          {
            type: 'run.queued',
            runId,
            actorType: 'user',
            actorId: cmd.principal.principalId,
            data: {
              agentId: agent.id,
              agentVersion: agent.version,
              principalId: cmd.principal.principalId,
              modelPolicy: cmd.overrides.modelPolicy ?? agent.modelPolicy,
              userMessageId: messageId,
              limits: { ...agent.limits, ...cmd.overrides.limits },
              priority: cmd.overrides.priority ?? 100,
              idempotencyKey: cmd.idempotencyKey,
              requestHash: cmd.idempotencyKey === null ? null : requestHash,
            },
          },
        ],
        { tenantId: cmd.principal.tenantId },
      );
    } catch (e) {
      // A concurrent submit with the same key won the race: answer as it would have.
      if (e instanceof ConflictError && cmd.idempotencyKey !== null) {
        const prior = await this.sessions.idempotentSubmission(cmd.principal, cmd.idempotencyKey);
        if (prior) return this.replay(prior, requestHash);
      }
      throw e;
    }
    return { runId, sessionId: cmd.sessionId, status: 'queued', replayed: false };
  }

  private replay(prior: { runId: string; sessionId: string; requestHash: string }, requestHash: string): SubmittedRun {
    if (prior.requestHash !== requestHash) {
      throw new ConflictError('this Idempotency-Key was already used with a different request', {
        runId: prior.runId,
        reason: 'idempotency_key_reused',
      });
    }
    return { runId: prior.runId, sessionId: prior.sessionId, status: 'queued', replayed: true };
  }
}
