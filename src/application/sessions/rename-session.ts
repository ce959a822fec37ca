import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { sessionDecider, sessionStateOf } from '../../domain/deciders/session';
import { ConcurrencyConflict, NotFoundError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { SessionRecord } from '../../domain/session';
import type { EventStore } from '../../ports/event-store';
import type { SessionRepository } from '../../ports/session-repository';
import { handleCommand } from '../command-handler';
import { EVENT_STORE, SESSION_REPOSITORY } from '../tokens';

export class RenameSessionCommand extends Command<SessionRecord> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly title: string,
  ) {
    super();
  }
}

/**
 * Renames a session by appending `session.title.changed` (the session decider validates the title;
 * renaming to the current title writes nothing). Answers the session as it is afterwards.
 */
@CommandHandler(RenameSessionCommand)
export class RenameSessionHandler implements ICommandHandler<RenameSessionCommand> {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(SESSION_REPOSITORY) private readonly sessions: SessionRepository,
  ) {}

  async execute(cmd: RenameSessionCommand): Promise<SessionRecord> {
    const { principal, sessionId } = cmd;
    const notFound = () => new NotFoundError(`session ${sessionId} not found`, { sessionId });
    await handleCommand(this.store, {
      load: async () => {
        const session = await this.sessions.get(sessionId, principal);
        if (!session || session.status === 'deleted') throw notFound();
        return {
          sessionId: session.id,
          tenantId: principal.tenantId,
          state: sessionStateOf(session, null),
          expectedSequence: session.lastSequence,
        };
      },
      decide: (state) =>
        sessionDecider.decide(
          {
            kind: 'RenameSession',
            sessionId,
            actor: { actorType: 'user', actorId: principal.principalId },
            title: cmd.title,
          },
          state,
        ),
      result: () => undefined,
      exhausted: () =>
        new ConcurrencyConflict(`session ${sessionId} kept changing while it was being renamed; try again`, {
          sessionId,
        }),
    });
    const renamed = await this.sessions.get(sessionId, principal);
    if (!renamed || renamed.status === 'deleted') throw notFound();
    return renamed;
  }
}
