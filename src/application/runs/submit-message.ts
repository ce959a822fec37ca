import { createHash } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { sessionDecider, sessionStateOf } from '../../domain/deciders/session';
import { ConcurrencyConflict, ConflictError, NotFoundError, ValidationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { RunLimits } from '../../domain/run/limits';
import type { AgentCatalog } from '../../ports/agent-catalog';
import type { IdFactory } from '../../ports/clock';
import type { EventStore } from '../../ports/event-store';
import type { SessionRepository } from '../../ports/session-repository';
import { handleCommand } from '../command-handler';
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
    try {
      return await this.submit(cmd, text, requestHash);
    } catch (e) {
      // A concurrent submit with the same key won the race: answer as it would have.
      if (e instanceof ConflictError && cmd.idempotencyKey !== null) {
        const prior = await this.sessions.idempotentSubmission(cmd.principal, cmd.idempotencyKey);
        if (prior) return this.replay(prior, requestHash);
      }
      throw e;
    }
  }

  /**
   * The message and its queued run, in one append. Unconditional on the sequence: the database's
   * one-active-run index refuses a second active run (ConflictError), and the idempotency index a
   * reused key.
   */
  private submit(cmd: SubmitMessageCommand, text: string, requestHash: string): Promise<SubmittedRun> {
    const { principal } = cmd;
    return handleCommand(this.store, {
      load: async () => {
        const session = await this.sessions.get(cmd.sessionId, principal);
        if (!session || session.status === 'deleted')
          throw new NotFoundError(`session ${cmd.sessionId} not found`, { sessionId: cmd.sessionId });
        const agent = await this.agents.get(session.agentId, session.agentVersion);
        if (!agent)
          throw new NotFoundError(`agent ${session.agentId} v${session.agentVersion} not found`, {
            agentId: session.agentId,
          });
        const ids = { runId: this.ids.uuid(), messageId: this.ids.uuid() };
        return { sessionId: cmd.sessionId, tenantId: principal.tenantId, state: { session, agent, ...ids } };
      },
      decide: ({ session, agent, runId, messageId }) =>
        sessionDecider.decide(
          {
            kind: 'SubmitMessage',
            sessionId: cmd.sessionId,
            messageId,
            content: [{ type: 'text', text }],
            run: {
              runId,
              actor: { actorType: 'user', actorId: principal.principalId },
              agentId: agent.id,
              agentVersion: agent.version,
              principalId: principal.principalId,
              modelPolicy: cmd.overrides.modelPolicy ?? agent.modelPolicy,
              limits: { ...agent.limits, ...cmd.overrides.limits },
              priority: cmd.overrides.priority ?? 100,
              idempotencyKey: cmd.idempotencyKey,
              requestHash: cmd.idempotencyKey === null ? null : requestHash,
            },
          },
          sessionStateOf(session, null),
        ),
      result: ({ state }) => ({ runId: state.runId, sessionId: cmd.sessionId, status: 'queued', replayed: false }),
      exhausted: () =>
        new ConcurrencyConflict(`session ${cmd.sessionId} kept changing while the message was submitted; try again`, {
          sessionId: cmd.sessionId,
        }),
    });
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
