import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { NotFoundError } from '../../domain/errors';
import type { StoredEvent } from '../../domain/events/payloads';
import type { Principal } from '../../domain/principal';
import type { RunRecord } from '../../domain/run/run';
import { approvalReach } from '../../domain/scopes';
import type { EventStore } from '../../ports/event-store';
import type { ChildRun, ChildRunStore, RunRepository } from '../../ports/run-store';
import { CHILD_RUN_STORE } from './child-runs';
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

/** A run's child runs (delegate.run, ADR 0037), oldest first; only for a run the principal may read. */
export class ListRunChildrenQuery extends Query<ChildRun[]> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
  ) {
    super();
  }
}

@QueryHandler(ListRunChildrenQuery)
export class ListRunChildrenHandler implements IQueryHandler<ListRunChildrenQuery> {
  constructor(
    @Inject(RUN_REPOSITORY) private readonly runs: RunRepository,
    @Inject(CHILD_RUN_STORE) private readonly children: ChildRunStore,
  ) {}

  async execute(q: ListRunChildrenQuery): Promise<ChildRun[]> {
    const run = await this.runs.get(q.runId, q.principal);
    if (!run) throw new NotFoundError(`run ${q.runId} not found`, { runId: q.runId });
    return this.children.childrenOf(run.id, q.principal.tenantId);
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

/**
 * The principal's approvals (pending, resolved, or all), newest first — every principal's of its
 * tenant for an approver (`approvals.review`, ADR 0032). Approvals belong to runs.
 */
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
    return this.approvals.list(approvalReach(q.principal), q.status, q.limit, q.cursor);
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
    const a = await this.approvals.get(q.approvalId, approvalReach(q.principal));
    if (!a) throw new NotFoundError(`approval ${q.approvalId} not found`, { approvalId: q.approvalId });
    return a;
  }
}
