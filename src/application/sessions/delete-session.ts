import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { ConcurrencyConflict, InvalidStateTransition, NotFoundError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { isTerminal } from '../../domain/run/status';
import type { EventStore } from '../../ports/event-store';
import type { RunRepository } from '../../ports/run-store';
import type { SessionRepository } from '../../ports/session-repository';
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
    for (let attempt = 0; attempt < 10; attempt++) {
      const session = await this.sessions.get(cmd.sessionId, cmd.principal);
      if (!session) throw new NotFoundError(`session ${cmd.sessionId} not found`, { sessionId: cmd.sessionId });
      if (session.status === 'deleted') return { sessionId: session.id, deletedNow: false };
      if (session.activeRunId !== null) {
        const run = await this.runs.get(session.activeRunId, cmd.principal);
        if (run && !isTerminal(run.status)) {
          throw new InvalidStateTransition(
            `session ${session.id} has a ${run.status} run; cancel it and wait for it to end before deleting`,
            {
              sessionId: session.id,
              runId: run.id,
              runStatus: run.status,
            },
          );
        }
      }
      try {
        await this.store.append(
          session.id,
          [
            {
              type: 'session.deleted',
              actorType: 'user',
              actorId: cmd.principal.principalId,
              data: { reason: cmd.reason },
            },
          ],
          {
            tenantId: cmd.principal.tenantId,
            expectedSequence: session.lastSequence,
          },
        );
        return { sessionId: session.id, deletedNow: true };
      } catch (e) {
        if (!(e instanceof ConcurrencyConflict)) throw e;
      }
    }
    throw new ConcurrencyConflict(`session ${cmd.sessionId} kept changing while it was being deleted; try again`, {
      sessionId: cmd.sessionId,
    });
  }
}
