import type { NewEvent } from '../../../domain/events/payloads';
import type { RunJournal, RunLease, RunWriteOptions, RunWriteResult } from '../../../ports/run-journal';
import { toRunRecord } from '../../../domain/projections/run-record';
import type { PgAppender } from './pg-appender';

/** The run journal on PostgreSQL: a fenced append of the shared appender, checkpoints in its statement. */
export class PgRunJournal implements RunJournal {
  constructor(private readonly appender: PgAppender) {}

  async write(lease: RunLease, events: readonly NewEvent[], options: RunWriteOptions = {}): Promise<RunWriteResult> {
    const own = {
      sessionId: lease.sessionId,
      tenantId: lease.tenantId,
      events,
      expectedSequence: options.expectedSequence,
      fence: { runId: lease.runId, leaseEpoch: lease.leaseEpoch },
      checkpoints: options.checkpoints,
      continuationMayBeStored: options.continuationMayBeStored,
    };
    // The run's own append first: its fence and condition decide before anything else is written.
    const done =
      options.alongside && options.alongside.length > 0
        ? (await this.appender.appendTogether([own, ...options.alongside]))[0]
        : await this.appender.append(own);
    // The fence held, so the run row exists: it is what the fence was checked on.
    return { events: done.events, lastSequence: done.lastSequence, run: toRunRecord(done.runRow!) };
  }
}
