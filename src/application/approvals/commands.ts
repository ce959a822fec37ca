import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { NotFoundError, ValidationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { ApprovalEditChecks } from '../../ports/approval-edits';
import type { Clock } from '../../ports/clock';
import type { EventStore } from '../../ports/event-store';
import type { RunRepository } from '../../ports/run-store';
import type { SessionRepository } from '../../ports/session-repository';
import type { ToolRecordStore } from '../../ports/tool-records';
import { CLOCK, EVENT_STORE, RUN_REPOSITORY, SESSION_REPOSITORY } from '../tokens';
import { ApprovalService, type ApprovalDecision, type ResolvedApproval } from './approval-service';
import { APPROVAL_EDIT_CHECKS, TOOL_RECORDS } from './tokens';

/** Resolves a pending approval (plan §9.3). First resolution wins; a later one is a ConflictError. */
export class ResolveApprovalCommand extends Command<ResolvedApproval> {
  constructor(
    readonly principal: Principal,
    readonly approvalId: string,
    readonly decision: ApprovalDecision,
    readonly reason: string | null,
    /** With `approve_with_edits`: the edited arguments (ADR 0044). */
    readonly edited?: Record<string, unknown>,
  ) {
    super();
  }
}

/** Decides an UNCERTAIN invocation: `retry` executes it again knowingly; `fail` records it as failed. */
export class ReviewUncertainInvocationCommand extends Command<ResolvedApproval> {
  constructor(
    readonly principal: Principal,
    readonly invocationId: string,
    readonly action: 'retry' | 'fail',
    readonly reason: string | null = null,
  ) {
    super();
  }
}

abstract class ApprovalHandlerBase {
  protected readonly service: ApprovalService;
  constructor(
    store: EventStore,
    runs: RunRepository,
    sessions: SessionRepository,
    records: ToolRecordStore,
    clock: Clock,
    edits?: ApprovalEditChecks,
  ) {
    this.service = new ApprovalService({ store, runs, sessions, records, clock, ...(edits ? { edits } : {}) });
  }
}

@CommandHandler(ResolveApprovalCommand)
export class ResolveApprovalHandler extends ApprovalHandlerBase implements ICommandHandler<ResolveApprovalCommand> {
  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    @Inject(RUN_REPOSITORY) runs: RunRepository,
    @Inject(SESSION_REPOSITORY) sessions: SessionRepository,
    @Inject(TOOL_RECORDS) records: ToolRecordStore,
    @Inject(CLOCK) clock: Clock,
    @Inject(APPROVAL_EDIT_CHECKS) edits: ApprovalEditChecks,
  ) {
    super(store, runs, sessions, records, clock, edits);
  }

  execute(cmd: ResolveApprovalCommand): Promise<ResolvedApproval> {
    return this.service.resolve(cmd.principal, cmd.approvalId, cmd.decision, cmd.reason, cmd.edited);
  }
}

@CommandHandler(ReviewUncertainInvocationCommand)
export class ReviewUncertainInvocationHandler
  extends ApprovalHandlerBase
  implements ICommandHandler<ReviewUncertainInvocationCommand>
{
  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    @Inject(RUN_REPOSITORY) runs: RunRepository,
    @Inject(SESSION_REPOSITORY) sessions: SessionRepository,
    @Inject(TOOL_RECORDS) private readonly records: ToolRecordStore,
    @Inject(CLOCK) clock: Clock,
  ) {
    super(store, runs, sessions, records, clock);
  }

  async execute(cmd: ReviewUncertainInvocationCommand): Promise<ResolvedApproval> {
    if (cmd.action !== 'retry' && cmd.action !== 'fail')
      throw new ValidationError('action must be retry or fail', { field: 'action' });
    const inv = await this.records.invocation(cmd.invocationId, cmd.principal.tenantId);
    if (!inv)
      throw new NotFoundError(`tool invocation ${cmd.invocationId} not found`, { invocationId: cmd.invocationId });
    const review = await this.records.approvalForInvocation(inv.id, 'uncertain_review');
    if (!review || inv.status !== 'uncertain') {
      throw new NotFoundError(
        `tool invocation ${cmd.invocationId} is ${inv.status}, not awaiting an uncertainty review`,
        { invocationId: cmd.invocationId, status: inv.status },
      );
    }
    return this.service.resolve(cmd.principal, review.id, cmd.action === 'retry' ? 'approve_once' : 'deny', cmd.reason);
  }
}
