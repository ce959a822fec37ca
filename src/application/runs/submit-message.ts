import { createHash } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { evolveAll } from '../../domain/deciders/decider';
import { sessionDecider, sessionStateOf, type SessionState, type SubmitMessage } from '../../domain/deciders/session';
import type { AgentSpec } from '../../domain/agent';
import type { SessionRecord } from '../../domain/session';
import type { NewEvent } from '../../domain/events/payloads';
import { DEFAULT_MULTITASK_STRATEGY, isInterruptMode, type MultitaskStrategy } from '../../domain/run/multitask';
import { runStateOf } from '../../domain/deciders/run';
import type { InterruptState } from '../../domain/deciders/run-interrupt';
import type { ToolInvocationStatus } from '../../domain/deciders/tool-invocation';
import type { RunRecord } from '../../domain/run/run';
import type { ToolRecordStore } from '../../ports/tool-records';
import { pendingApprovalOf } from '../approvals/approval-service';
import { TOOL_RECORDS } from '../approvals/tokens';
import { queuePosition } from '../../domain/run/session-queue';
import type { RunRepository } from '../../ports/run-store';
import { ConcurrencyConflict, ConflictError, NotFoundError, ValidationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { ScopeSet } from '../../domain/scopes';
import type { RunLimits } from '../../domain/run/limits';
import type { AgentCatalog } from '../../ports/agent-catalog';
import type { IdFactory } from '../../ports/clock';
import type { EventStore } from '../../ports/event-store';
import type { SessionRepository } from '../../ports/session-repository';
import { agentDefinition } from '../agent-definition';
import { handleCommand } from '../command-handler';
import {
  AGENT_CATALOG,
  APP_SETTINGS,
  EVENT_STORE,
  ID_FACTORY,
  RUN_REPOSITORY,
  SESSION_REPOSITORY,
  type ApplicationSettings,
} from '../tokens';

export interface SubmittedRun {
  readonly runId: string;
  readonly sessionId: string;
  readonly status: 'queued';
  /** True when an earlier submission with the same idempotency key was returned. */
  readonly replayed: boolean;
  /**
   * For a run queued behind others (`enqueue`): how many of the session's runs are ahead of it (1:
   * right behind the active run). Null for a run that is next to be claimed, and for a replay.
   */
  readonly position: number | null;
}

/** Trusted-caller overrides (CLI, eval harness); never accepted from the HTTP API. */
export interface RunOverrides {
  readonly modelPolicy?: string;
  readonly limits?: Partial<RunLimits>;
  readonly priority?: number;
}

/**
 * Submits a message as `principal`. The run it queues records its scope set (ADR 0032):
 * `principal.scopes` narrowed to the agent's `allowed_scopes`. A caller acting for an earlier run
 * (a schedule, a subagent) passes a principal whose scopes are that origin's recorded set
 * (`runPrincipal(run)` in domain/scopes.ts), never wider.
 */
export class SubmitMessageCommand extends Command<SubmittedRun> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly text: string,
    readonly idempotencyKey: string | null = null,
    readonly overrides: RunOverrides = {},
    /** What to do while another run of the session works; null: the agent's default (else `reject`). */
    readonly strategy: MultitaskStrategy | null = null,
    /**
     * The session as the caller read it for `principal` just before (the API's submit reads it to
     * route the message): the first attempt decides on it instead of reading it again; a retry after
     * a concurrent append reads afresh (ADR 0053).
     */
    readonly session: SessionRecord | null = null,
  ) {
    super();
  }
}

/** A live session of the principal and the agent version it is pinned to; either missing is "not found". */
export async function liveSessionAndAgent(
  sessions: SessionRepository,
  agents: AgentCatalog,
  sessionId: string,
  principal: Principal,
  /** The session as the caller just read it for `principal` (not read again), or null. */
  given: SessionRecord | null = null,
): Promise<{ session: SessionRecord; agent: AgentSpec }> {
  const session = given ?? (await sessions.get(sessionId, principal));
  if (!session || session.status === 'deleted')
    throw new NotFoundError(`session ${sessionId} not found`, { sessionId });
  const agent = await agentDefinition(agents, session.agentId, session.agentVersion);
  if (!agent)
    throw new NotFoundError(`agent ${session.agentId} v${session.agentVersion} not found`, {
      agentId: session.agentId,
    });
  return { session, agent };
}

/** A user message's text, checked: not blank and within `maxChars`; a refusal names `field`. */
export function checkMessageText(text: unknown, maxChars: number, field: string): asserts text is string {
  if (typeof text !== 'string' || text.trim() === '')
    throw new ValidationError('message text must not be empty', { field });
  if (text.length > maxChars)
    throw new ValidationError(`message text is ${text.length} characters; the limit is ${maxChars}`, { field });
}

/**
 * The run a user's message queues: the agent's model policy, limits and priority (a trusted caller's
 * overrides win), and the scope set fixed now, from the submitter's scopes and the agent's (ADR 0032).
 */
export function userRun(
  principal: Principal,
  agent: AgentSpec,
  runId: string,
  overrides: RunOverrides = {},
  idempotency: { readonly idempotencyKey: string | null; readonly requestHash: string | null } = {
    idempotencyKey: null,
    requestHash: null,
  },
): SubmitMessage['run'] {
  return {
    runId,
    actor: { actorType: 'user', actorId: principal.principalId },
    agentId: agent.id,
    agentVersion: agent.version,
    principalId: principal.principalId,
    modelPolicy: overrides.modelPolicy ?? agent.modelPolicy,
    limits: { ...agent.limits, ...overrides.limits },
    priority: overrides.priority ?? 100,
    ...idempotency,
    scopes: ScopeSet.forRun(principal.scopes, agent.allowedScopes).names,
  };
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
    @Inject(RUN_REPOSITORY) private readonly runs: RunRepository,
    @Inject(TOOL_RECORDS) private readonly records: ToolRecordStore,
  ) {}

  async execute(cmd: SubmitMessageCommand): Promise<SubmittedRun> {
    const text = cmd.text;
    checkMessageText(text, this.settings.maxMessageChars, 'text');
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
   * The message and its queued run, in one append conditional on the session's sequence, read before
   * its active run: the session decider decides against that state whether the message is refused,
   * starts a run, or queues one behind the session's runs (`strategy`, issue 33), and an append
   * committed in between (the active run ending, another message) makes it decide again. The
   * database's one-active-run index still refuses two plain runs, and the idempotency index a reused key.
   */
  private submit(cmd: SubmitMessageCommand, text: string, requestHash: string): Promise<SubmittedRun> {
    const { principal } = cmd;
    let given = cmd.session?.id === cmd.sessionId ? cmd.session : null;
    return handleCommand(this.store, {
      load: async () => {
        const preread = given;
        given = null;
        const { session, agent } = await liveSessionAndAgent(
          this.sessions,
          this.agents,
          cmd.sessionId,
          principal,
          preread,
        );
        const active = session.activeRunId === null ? null : await this.runs.get(session.activeRunId, principal);
        const strategy = cmd.strategy ?? agent.multitaskStrategy ?? DEFAULT_MULTITASK_STRATEGY;
        const interrupting = active && isInterruptMode(strategy) ? await this.interruptState(active) : undefined;
        const ids = { runId: this.ids.uuid(), messageId: this.ids.uuid() };
        return {
          sessionId: cmd.sessionId,
          tenantId: principal.tenantId,
          state: { session: sessionStateOf(session, active), agent, strategy, interrupting, ...ids },
          expectedSequence: session.lastSequence,
        };
      },
      decide: ({ session, agent, strategy, interrupting, runId, messageId }) =>
        sessionDecider.decide(
          {
            kind: 'SubmitMessage',
            sessionId: cmd.sessionId,
            messageId,
            content: [{ type: 'text', text }],
            strategy,
            ...(interrupting ? { interrupting } : {}),
            run: userRun(principal, agent, runId, cmd.overrides, {
              idempotencyKey: cmd.idempotencyKey,
              requestHash: cmd.idempotencyKey === null ? null : requestHash,
            }),
          },
          session,
        ),
      result: ({ state }, appended) => ({
        runId: state.runId,
        sessionId: cmd.sessionId,
        status: 'queued',
        replayed: false,
        position: positionAfter(state.session, appended, state.runId),
      }),
      exhausted: () =>
        new ConcurrencyConflict(`session ${cmd.sessionId} kept changing while the message was submitted; try again`, {
          sessionId: cmd.sessionId,
        }),
    });
  }

  /** The active run as stopping it needs it: its state, pending approvals and open invocations. */
  private async interruptState(active: RunRecord): Promise<InterruptState> {
    const pending = active.status === 'waiting_for_approval' ? await this.records.pendingApprovalsOfRun(active.id) : [];
    const open = active.status === 'running' ? [] : await this.records.openInvocationsOfRun(active.id);
    return {
      run: runStateOf(active),
      pendingApprovals: pending.map(pendingApprovalOf),
      openInvocations: open.map((o) => ({ invocationId: o.invocationId, status: o.status as ToolInvocationStatus })),
    };
  }

  private replay(prior: { runId: string; sessionId: string; requestHash: string }, requestHash: string): SubmittedRun {
    if (prior.requestHash !== requestHash) {
      throw new ConflictError('this Idempotency-Key was already used with a different request', {
        runId: prior.runId,
        reason: 'idempotency_key_reused',
      });
    }
    return { runId: prior.runId, sessionId: prior.sessionId, status: 'queued', replayed: true, position: null };
  }
}

/** The new run's place in its session's queue after the append (null: nothing is ahead of it). */
function positionAfter(state: SessionState, appended: readonly NewEvent[], runId: string): number | null {
  const after = evolveAll(sessionDecider, state, appended);
  const position = queuePosition({ active: after.activeRun?.runId ?? null, queued: after.queuedRunIds }, runId);
  return position === null || position === 0 ? null : position;
}
