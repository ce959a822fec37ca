import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { sessionDecider, type ForkPoint } from '../../domain/deciders/session';
import { ConcurrencyConflict } from '../../domain/errors';
import { checkMessageText, liveSessionAndAgent, userRun } from '../runs/submit-message';
import type { Principal } from '../../domain/principal';
import type { SessionRecord } from '../../domain/session';
import { SESSION_TITLE_MAX_CHARS } from '../../domain/session-title';
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

export interface ForkedSession {
  readonly id: string;
  readonly parentSessionId: string;
  readonly atSequence: number;
  /** The run of the replacement message, when one was sent. */
  readonly runId: string | null;
}

export class ForkSessionCommand extends Command<ForkedSession> {
  constructor(
    readonly principal: Principal,
    readonly parentSessionId: string,
    /** The parent sequence to fork at; null: the end of the parent's log. */
    readonly atSequence: number | null,
    /** The replacement for the user message at `atSequence` ("edit and resend"), or null. */
    readonly text: string | null,
  ) {
    super();
  }
}

/**
 * Forks one of the principal's sessions at a point of its log (issue 33, ADR 0038): one append of
 * `session.forked` (and, with a replacement message, that message and its queued run) to the new
 * session's stream. The parent's log is read, never written; approvals and questions stay with it.
 */
@CommandHandler(ForkSessionCommand)
export class ForkSessionHandler implements ICommandHandler<ForkSessionCommand> {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(SESSION_REPOSITORY) private readonly sessions: SessionRepository,
    @Inject(AGENT_CATALOG) private readonly agents: AgentCatalog,
    @Inject(ID_FACTORY) private readonly ids: IdFactory,
    @Inject(APP_SETTINGS) private readonly settings: ApplicationSettings,
  ) {}

  async execute(cmd: ForkSessionCommand): Promise<ForkedSession> {
    const { principal } = cmd;
    if (cmd.text !== null) checkMessageText(cmd.text, this.settings.maxMessageChars, 'message');
    const { session: parent, agent } = await liveSessionAndAgent(
      this.sessions,
      this.agents,
      cmd.parentSessionId,
      principal,
    );
    const point = await this.forkPoint(parent, cmd.atSequence ?? parent.lastSequence, principal);
    const ids = { sessionId: this.ids.uuid(), runId: this.ids.uuid(), messageId: this.ids.uuid() };
    const actor = { actorType: 'user' as const, actorId: principal.principalId };
    const title = forkTitle(parent.title);
    const message =
      cmd.text === null
        ? null
        : {
            sessionId: ids.sessionId,
            messageId: ids.messageId,
            content: [{ type: 'text' as const, text: cmd.text }],
            // As any submitted run: the agent's policy and limits, the submitter's scopes (ADR 0032).
            run: userRun(principal, agent, ids.runId),
          };
    return handleCommand(this.store, {
      load: async () => ({
        sessionId: ids.sessionId,
        tenantId: principal.tenantId,
        state: sessionDecider.initialState(),
      }),
      decide: (state) =>
        sessionDecider.decide(
          {
            kind: 'ForkSession',
            actor,
            agentId: agent.id,
            agentVersion: agent.version,
            principalId: principal.principalId,
            title,
            metadata: { forked_from: parent.id },
            parent: point,
            message,
          },
          state,
        ),
      result: () => ({
        id: ids.sessionId,
        parentSessionId: parent.id,
        atSequence: point.atSequence,
        runId: message === null ? null : ids.runId,
      }),
      // A fresh id: the append is unconditional and never conflicts.
      exhausted: () => new ConcurrencyConflict('the fork could not be created; try again', { sessionId: parent.id }),
    });
  }

  /**
   * The event at `atSequence` of the parent's log as the fork's history reads it: from the parent's
   * own stream, or — for a sequence inside the parent's own inherited prefix — from the ancestor
   * whose stream holds it.
   */
  private async forkPoint(parent: SessionRecord, atSequence: number, principal: Principal): Promise<ForkPoint> {
    let holder: SessionRecord | null = parent;
    while (holder?.forkedAtSequence != null && atSequence <= holder.forkedAtSequence)
      holder = await this.sessions.get(holder.parentSessionId!, principal);
    const inRange = holder !== null && atSequence >= 1 && atSequence <= parent.lastSequence;
    const at = inRange ? (await this.store.listAfter(holder!.id, atSequence - 1, principal, 1))[0] : undefined;
    return {
      sessionId: parent.id,
      lastSequence: parent.lastSequence,
      atSequence,
      eventType: at?.sequence === atSequence ? at.type : 'none',
      messageId: at?.type === 'user.message.created' ? at.data.messageId : null,
    };
  }
}

/** "<parent title> (fork)", within the title limit; untitled parents give an untitled fork. */
function forkTitle(parentTitle: string | null): string | null {
  if (parentTitle === null) return null;
  const suffix = ' (fork)';
  return parentTitle.slice(0, SESSION_TITLE_MAX_CHARS - suffix.length) + suffix;
}
