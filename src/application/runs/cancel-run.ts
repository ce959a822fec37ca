import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { ConcurrencyConflict, NotFoundError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { RunStatus } from '../../domain/run/status';
import { isTerminal } from '../../domain/run/status';
import type { EventStore } from '../../ports/event-store';
import type { RunRepository } from '../../ports/run-store';
import type { SessionRepository } from '../../ports/session-repository';
import type { NewEvent } from '../../domain/events/payloads';
import type { ToolRecordStore } from '../../ports/tool-records';
import { ApprovalService } from '../approvals/approval-service';
import { TOOL_RECORDS } from '../approvals/tokens';
import { CLOCK, EVENT_STORE, RUN_REPOSITORY, SESSION_REPOSITORY } from '../tokens';
import type { Clock } from '../../ports/clock';

export interface CancelResult {
  readonly runId: string;
  /** `cancelled`: done now; `cancel_requested`: a worker will stop at its next check; `already_terminal`. */
  readonly outcome: 'cancelled' | 'cancel_requested' | 'already_terminal';
  readonly status: RunStatus;
}

export class CancelRunCommand extends Command<CancelResult> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
    readonly reason: string | null = null,
  ) {
    super();
  }
}

/**
 * QUEUED and waiting runs have no worker watching them, so they are cancelled directly; a RUNNING
 * run is asked to stop and its worker finalizes it (plan §9.3). A waiting run's pending approvals are
 * reaped in the same append (resolved as denied, the invocation refused with `run_cancelled`). The
 * append is conditional on the session sequence we read, so a claim racing with the cancel is seen.
 */
@CommandHandler(CancelRunCommand)
export class CancelRunHandler implements ICommandHandler<CancelRunCommand> {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(RUN_REPOSITORY) private readonly runs: RunRepository,
    @Inject(SESSION_REPOSITORY) private readonly sessions: SessionRepository,
    @Inject(TOOL_RECORDS) private readonly records: ToolRecordStore,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute(cmd: CancelRunCommand): Promise<CancelResult> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const located = await this.runs.get(cmd.runId, cmd.principal);
      if (!located) throw new NotFoundError(`run ${cmd.runId} not found`, { runId: cmd.runId });
      // The sequence is read before the run state it guards, so a claim or resolution committed in
      // between fails our conditional append instead of being overwritten.
      const session = await this.sessions.get(located.sessionId, cmd.principal);
      if (!session) throw new NotFoundError(`run ${cmd.runId} not found`, { runId: cmd.runId });
      const run = await this.runs.get(cmd.runId, cmd.principal);
      if (!run) throw new NotFoundError(`run ${cmd.runId} not found`, { runId: cmd.runId });
      if (isTerminal(run.status)) return { runId: run.id, outcome: 'already_terminal', status: run.status };
      const actor = { actorType: 'user' as const, actorId: cmd.principal.principalId, runId: run.id };
      try {
        if (run.status === 'running') {
          if (run.cancelRequestedAt) return { runId: run.id, outcome: 'cancel_requested', status: run.status };
          await this.store.append(
            run.sessionId,
            [{ ...actor, type: 'run.cancel_requested', data: { reason: cmd.reason } }],
            {
              tenantId: cmd.principal.tenantId,
              expectedSequence: session.lastSequence,
            },
          );
          return { runId: run.id, outcome: 'cancel_requested', status: 'running' };
        }
        const reaped: NewEvent[] =
          run.status === 'waiting_for_approval'
            ? await new ApprovalService({
                store: this.store,
                runs: this.runs,
                sessions: this.sessions,
                records: this.records,
                clock: this.clock,
              }).reapEventsForCancel(run.id, cmd.principal.principalId)
            : [];
        await this.store.append(
          run.sessionId,
          [...reaped, { ...actor, type: 'run.cancelled', data: { reason: cmd.reason } }],
          {
            tenantId: cmd.principal.tenantId,
            expectedSequence: session.lastSequence,
          },
        );
        return { runId: run.id, outcome: 'cancelled', status: 'cancelled' };
      } catch (e) {
        if (!(e instanceof ConcurrencyConflict)) throw e;
      }
    }
    throw new ConcurrencyConflict(`run ${cmd.runId} kept changing while it was being cancelled; try again`, {
      runId: cmd.runId,
    });
  }
}
