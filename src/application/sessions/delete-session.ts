import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { sessionDecider, sessionStateOf } from '../../domain/deciders/session';
import { ConcurrencyConflict, NotFoundError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { EventStore } from '../../ports/event-store';
import type { RunRepository } from '../../ports/run-store';
import type { SessionRepository } from '../../ports/session-repository';
import { handleCommand } from '../command-handler';
import { EVENT_STORE, RUN_REPOSITORY, SESSION_REPOSITORY } from '../tokens';

export interface DeletedSession {
  readonly sessionId: string;
  /** False when the session was already deleted (a repeated delete). */
  readonly deletedNow: boolean;
}

export class DeleteSessionCommand extends Command<DeletedSession> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly reason: string | null = null,
  ) {
    super();
  }
}

/**
 * Deletes a session by appending `session.deleted`: it disappears from every read, and a repeated
 * delete by its owner succeeds again. Refused while a run is not terminal (cancel it first). The
 * append is conditional on the sequence we read, so a submission racing the delete is noticed.
 */
@CommandHandler(DeleteSessionCommand)
export class DeleteSessionHandler implements ICommandHandler<DeleteSessionCommand> {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(SESSION_REPOSITORY) private readonly sessions: SessionRepository,
    @Inject(RUN_REPOSITORY) private readonly runs: RunRepository,
  ) {}

  async execute(cmd: DeleteSessionCommand): Promise<DeletedSession> {
    const { principal, sessionId } = cmd;
    return handleCommand(this.store, {
      load: async () => {
        const session = await this.sessions.get(sessionId, principal);
        if (!session) throw new NotFoundError(`session ${sessionId} not found`, { sessionId });
        const run =
          session.status === 'active' && session.activeRunId !== null
            ? await this.runs.get(session.activeRunId, principal)
            : null;
        return {
          sessionId: session.id,
          tenantId: principal.tenantId,
          state: sessionStateOf(session, run),
          expectedSequence: session.lastSequence,
        };
      },
      decide: (state) =>
        sessionDecider.decide(
          {
            kind: 'DeleteSession',
            sessionId,
            actor: { actorType: 'user', actorId: principal.principalId },
            reason: cmd.reason,
          },
          state,
        ),
      result: (loaded, appended) => ({ sessionId: loaded.sessionId, deletedNow: appended.length > 0 }),
      exhausted: () =>
        new ConcurrencyConflict(`session ${sessionId} kept changing while it was being deleted; try again`, {
          sessionId,
        }),
    });
  }
}
