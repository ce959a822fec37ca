import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { NotFoundError } from '../../domain/errors';
import type { StoredEvent } from '../../domain/events/payloads';
import type { Principal } from '../../domain/principal';
import type { RunRecord } from '../../domain/run/run';
import type { EventStore } from '../../ports/event-store';
import type { RunRepository } from '../../ports/run-store';
import type { ApprovalReadModel, ApprovalRecord, Page } from '../../ports/read-models';
import { APPROVAL_READ_MODEL, EVENT_STORE, RUN_REPOSITORY } from '../tokens';

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

/** The principal's approvals (pending, resolved, or all), newest first. Approvals belong to runs. */
export class ListApprovalsQuery extends Query<Page<ApprovalRecord>> {
  constructor(
    readonly principal: Principal,
    readonly status: 'pending' | 'resolved' | null,
    readonly limit: number,
    readonly cursor: string | null,
  ) {
    super();
  }
}

@QueryHandler(ListApprovalsQuery)
export class ListApprovalsHandler implements IQueryHandler<ListApprovalsQuery> {
  constructor(@Inject(APPROVAL_READ_MODEL) private readonly approvals: ApprovalReadModel) {}

  execute(q: ListApprovalsQuery): Promise<Page<ApprovalRecord>> {
    return this.approvals.list(q.principal, q.status, q.limit, q.cursor);
  }
}

export class GetApprovalQuery extends Query<ApprovalRecord> {
  constructor(
    readonly principal: Principal,
    readonly approvalId: string,
  ) {
    super();
  }
}

@QueryHandler(GetApprovalQuery)
export class GetApprovalHandler implements IQueryHandler<GetApprovalQuery> {
  constructor(@Inject(APPROVAL_READ_MODEL) private readonly approvals: ApprovalReadModel) {}

  async execute(q: GetApprovalQuery): Promise<ApprovalRecord> {
    const a = await this.approvals.get(q.approvalId, q.principal);
    if (!a) throw new NotFoundError(`approval ${q.approvalId} not found`, { approvalId: q.approvalId });
    return a;
  }
}
