import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { NotFoundError } from '../../domain/errors';
import type { StoredEvent } from '../../domain/events/payloads';
import type { Principal } from '../../domain/principal';
import type { RunRecord } from '../../domain/run/run';
import type { EventStore } from '../../ports/event-store';
import type { RunRepository } from '../../ports/run-store';
import { EVENT_STORE, RUN_REPOSITORY } from '../tokens';

export class GetRunQuery extends Query<RunRecord> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
  ) {
    super();
  }
}

@QueryHandler(GetRunQuery)
export class GetRunHandler implements IQueryHandler<GetRunQuery> {
  constructor(@Inject(RUN_REPOSITORY) private readonly runs: RunRepository) {}

  async execute(q: GetRunQuery): Promise<RunRecord> {
    const run = await this.runs.get(q.runId, q.principal);
    if (!run) throw new NotFoundError(`run ${q.runId} not found`, { runId: q.runId });
    return run;
  }
}

export class ListRunEventsQuery extends Query<StoredEvent[]> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
    readonly afterSequence = 0,
  ) {
    super();
  }
}

@QueryHandler(ListRunEventsQuery)
export class ListRunEventsHandler implements IQueryHandler<ListRunEventsQuery> {
  constructor(
    @Inject(RUN_REPOSITORY) private readonly runs: RunRepository,
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  async execute(q: ListRunEventsQuery): Promise<StoredEvent[]> {
    const run = await this.runs.get(q.runId, q.principal);
    if (!run) throw new NotFoundError(`run ${q.runId} not found`, { runId: q.runId });
    return this.store.listRunEvents(q.runId, q.principal, q.afterSequence);
  }
}
