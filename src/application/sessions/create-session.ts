import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { sessionDecider } from '../../domain/deciders/session';
import { ConcurrencyConflict, NotFoundError, ValidationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { AgentCatalog } from '../../ports/agent-catalog';
import type { IdFactory } from '../../ports/clock';
import type { EventStore } from '../../ports/event-store';
import { agentDefinition } from '../agent-definition';
import { handleCommand } from '../command-handler';
import { checkMessageText, userRun, type RunOverrides } from '../runs/submit-message';
import { AGENT_CATALOG, APP_SETTINGS, EVENT_STORE, ID_FACTORY, type ApplicationSettings } from '../tokens';

export interface CreatedSession {
  readonly id: string;
  readonly status: 'active';
  readonly agentId: string;
  readonly agentVersion: number;
  /** The run of the session's first message, queued with it; null without one. */
  readonly runId: string | null;
}

/** A session's first message, sent with its creation (ADR 0053). */
export interface FirstMessage {
  readonly text: string;
  /** Trusted-caller overrides (CLI, bench); never accepted from the HTTP API. */
  readonly overrides?: RunOverrides;
}

export class CreateSessionCommand extends Command<CreatedSession> {
  constructor(
    readonly principal: Principal,
    readonly agentId: string | null = null,
    readonly title: string | null = null,
    readonly metadata: Record<string, unknown> = {},
    /** Sent with the creation: the session's first message and its run, in the same append. */
    readonly message: FirstMessage | null = null,
  ) {
    super();
  }
}

/**
 * Creates a session bound to the current version of an agent (the version is pinned for its life);
 * with a first message, the message and its queued run are decided with it and appended in the same
 * statement (one transaction), as a submit to the new session would decide them.
 */
@CommandHandler(CreateSessionCommand)
export class CreateSessionHandler implements ICommandHandler<CreateSessionCommand> {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(AGENT_CATALOG) private readonly agents: AgentCatalog,
    @Inject(ID_FACTORY) private readonly ids: IdFactory,
    @Inject(APP_SETTINGS) private readonly settings: ApplicationSettings,
  ) {}

  async execute(cmd: CreateSessionCommand): Promise<CreatedSession> {
    const agentId = cmd.agentId ?? this.settings.defaultAgentId;
    if (cmd.title !== null && cmd.title.length > 500)
      throw new ValidationError('title must be at most 500 characters', { field: 'title' });
    if (JSON.stringify(cmd.metadata).length > 16_384)
      throw new ValidationError('metadata must be at most 16 KiB of JSON', { field: 'metadata' });
    if (cmd.message !== null) checkMessageText(cmd.message.text, this.settings.maxMessageChars, 'message');
    const agent = await agentDefinition(this.agents, agentId, null);
    if (!agent) throw new NotFoundError(`unknown agent "${agentId}"`, { field: 'agent_id', agentId });
    const id = this.ids.uuid();
    const { principal, message } = cmd;
    const runId = message === null ? null : this.ids.uuid();
    const first =
      message === null || runId === null
        ? null
        : {
            sessionId: id,
            messageId: this.ids.uuid(),
            content: [{ type: 'text' as const, text: message.text }],
            run: userRun(principal, agent, runId, message.overrides),
          };
    return handleCommand(this.store, {
      load: async () => ({ sessionId: id, tenantId: principal.tenantId, state: sessionDecider.initialState() }),
      decide: (state) =>
        sessionDecider.decide(
          {
            kind: 'CreateSession',
            actor: { actorType: 'user', actorId: principal.principalId },
            agentId: agent.id,
            agentVersion: agent.version,
            principalId: principal.principalId,
            title: cmd.title,
            metadata: cmd.metadata,
            message: first,
          },
          state,
        ),
      result: () => ({ id, status: 'active', agentId: agent.id, agentVersion: agent.version, runId }),
      // A fresh id: the append is unconditional and never conflicts.
      exhausted: () => new ConcurrencyConflict(`session ${id} could not be created; try again`, { sessionId: id }),
    });
  }
}
