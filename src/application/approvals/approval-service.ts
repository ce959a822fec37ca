import {
  AuthorizationError,
  ConcurrencyConflict,
  ConflictError,
  NotFoundError,
  ValidationError,
} from '../../domain/errors';
import type { NewEvent } from '../../domain/events/payloads';
import type { Principal } from '../../domain/principal';
import { APPROVAL_DENIED, APPROVAL_EXPIRED, approvalOutcomeText, RUN_CANCELLED } from '../../domain/tools/outcomes';
import type { Clock } from '../../ports/clock';
import type { EventStore } from '../../ports/event-store';
import type { RunRepository } from '../../ports/run-store';
import type { SessionRepository } from '../../ports/session-repository';
import type { ApprovalRecord, ToolRecordStore } from '../../ports/tool-records';

export type ApprovalDecision = 'approve_once' | 'deny';
export const APPROVAL_DECISIONS: readonly ApprovalDecision[] = ['approve_once', 'deny'];

export interface ResolvedApproval {
  readonly approvalId: string;
  readonly runId: string;
  readonly status: 'approved' | 'denied' | 'expired';
  /** `resumed`: the run is queued again; `finished`: the run ended (expiry with on_expiry fail_run). */
  readonly run: 'resumed' | 'finished';
}

export interface ApprovalDeps {
  readonly store: EventStore;
  readonly runs: RunRepository;
  readonly sessions: SessionRepository;
  readonly records: ToolRecordStore;
  readonly clock: Clock;
}

const MAX_REASON_CHARS = 1000;
const ATTEMPTS = 10;

/** The reaper's principal: a system actor inside the approval's own tenant. */
function systemPrincipal(tenantId: string, principalId: string): Principal {
  return { tenantId, principalId, roles: new Set(['system']), scopes: new Set(['approvals.resolve']) };
}

/**
 * Approval lifecycle edges handled by the application, not the worker loop (plan §9.3): human
 * resolution, expiry, and reaping on cancellation. Every write is one append conditional on the
 * session sequence that was read, so the first resolution wins and a concurrent second one sees the
 * approval resolved and gets a ConflictError. Resolution re-queues the run (`run.resumed`, whose
 * commit NOTIFYs run_ready); the worker revalidates policy before executing anything.
 */
export class ApprovalService {
  constructor(private readonly deps: ApprovalDeps) {}

  async resolve(
    principal: Principal,
    approvalId: string,
    decision: unknown,
    reason: unknown,
  ): Promise<ResolvedApproval> {
    if (decision !== 'approve_once' && decision !== 'deny') {
      throw new ValidationError(`decision must be one of ${APPROVAL_DECISIONS.join(', ')}`, { field: 'decision' });
    }
    if (reason !== null && reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_REASON_CHARS)) {
      throw new ValidationError(`reason must be a string of at most ${MAX_REASON_CHARS} characters or null`, {
        field: 'reason',
      });
    }
    if (!principal.scopes.has('approvals.resolve'))
      throw new AuthorizationError('resolving approvals needs the approvals.resolve scope', {
        scope: 'approvals.resolve',
      });
    const why = typeof reason === 'string' && reason.trim() !== '' ? reason.trim() : null;
    return this.withRetries(approvalId, principal, async (a, lastSequence) => {
      const resolved = (d: 'approved' | 'denied'): NewEvent => ({
        type: 'approval.resolved',
        runId: a.runId,
        actorType: 'user',
        actorId: principal.principalId,
        data: { approvalId: a.id, decision: d, resolvedBy: principal.principalId, reason: why },
      });
      const events: NewEvent[] = [resolved(decision === 'approve_once' ? 'approved' : 'denied')];
      if (decision === 'deny' && a.invocationId)
        events.push(
          this.refusal(
            a,
            principal.principalId,
            a.actionKind === 'uncertain_review' ? 'review_failed' : APPROVAL_DENIED,
            why,
          ),
        );
      events.push({
        type: 'run.resumed',
        runId: a.runId,
        actorType: 'user',
        actorId: principal.principalId,
        data: {
          reason: `${a.actionKind === 'uncertain_review' ? 'review' : 'approval'}_${decision === 'approve_once' ? 'approved' : 'denied'}`,
        },
      });
      await this.deps.store.append(a.sessionId, events, { tenantId: a.tenantId, expectedSequence: lastSequence });
      return {
        approvalId: a.id,
        runId: a.runId,
        status: decision === 'approve_once' ? 'approved' : 'denied',
        run: 'resumed',
      };
    });
  }

  /**
   * Resolves every pending approval past its `expires_at` as expired (plan §9.3 reaper): the
   * invocation is DENIED with `approval_expired`, then the run either resumes so the model can tell
   * the user (`inform_model`) or fails with `approval_expired` (`fail_run`). Returns what it did.
   */
  async expireDue(onExpiry: 'inform_model' | 'fail_run', limit = 100): Promise<ResolvedApproval[]> {
    const due = await this.deps.records.expiredApprovals(this.deps.clock.nowIso(), limit);
    const done: ResolvedApproval[] = [];
    for (const candidate of due) {
      const actor = systemPrincipal(candidate.tenantId, 'system:approval-reaper');
      try {
        done.push(
          await this.withRetries(candidate.id, actor, async (a, lastSequence) => {
            if (!a.expiresAt || Date.parse(a.expiresAt) > this.deps.clock.nowMs())
              throw new ConflictError('not expired', {});
            const base = { runId: a.runId, actorType: 'system' as const, actorId: actor.principalId };
            const events: NewEvent[] = [
              {
                ...base,
                type: 'approval.resolved',
                data: {
                  approvalId: a.id,
                  decision: 'expired',
                  resolvedBy: actor.principalId,
                  reason: 'approval expired',
                },
              },
            ];
            if (a.invocationId) events.push(this.refusal(a, actor.principalId, APPROVAL_EXPIRED, null));
            if (onExpiry === 'fail_run') {
              events.push({
                ...base,
                type: 'run.failed',
                data: {
                  reason: 'approval_expired',
                  message: `approval ${a.id} expired at ${a.expiresAt}`,
                  errorCode: APPROVAL_EXPIRED,
                },
              });
            } else {
              events.push({ ...base, type: 'run.resumed', data: { reason: 'approval_expired' } });
            }
            await this.deps.store.append(a.sessionId, events, { tenantId: a.tenantId, expectedSequence: lastSequence });
            return {
              approvalId: a.id,
              runId: a.runId,
              status: 'expired',
              run: onExpiry === 'fail_run' ? 'finished' : 'resumed',
            };
          }),
        );
      } catch (e) {
        // Resolved or cancelled meanwhile: the first resolution won, which is what we want.
        if (!(e instanceof ConflictError) && !(e instanceof NotFoundError)) throw e;
      }
    }
    return done;
  }

  /**
   * The events that close a waiting run's pending approvals when it is cancelled (appended by the
   * cancel command in the same append as `run.cancelled`).
   */
  async reapEventsForCancel(runId: string, actorId: string): Promise<NewEvent[]> {
    const pending = await this.deps.records.pendingApprovalsOfRun(runId);
    return pending.flatMap((a) => {
      const base = { runId: a.runId, actorType: 'user' as const, actorId };
      const events: NewEvent[] = [
        {
          ...base,
          type: 'approval.resolved',
          data: { approvalId: a.id, decision: 'denied', resolvedBy: actorId, reason: 'run cancelled' },
        },
      ];
      if (a.invocationId && a.actionKind === 'tool_call') events.push(this.refusal(a, actorId, RUN_CANCELLED, null));
      return events;
    });
  }

  async get(principal: Principal, approvalId: string): Promise<ApprovalRecord> {
    const a = await this.deps.records.approval(approvalId, principal.tenantId);
    if (!a) throw new NotFoundError(`approval ${approvalId} not found`, { approvalId });
    return a;
  }

  list(principal: Principal, status: ApprovalRecord['status'] | null, limit = 100): Promise<ApprovalRecord[]> {
    return this.deps.records.listApprovals(principal.tenantId, status, Math.max(1, Math.min(limit, 500)));
  }

  /** The structured refusal the model receives instead of the tool's result (fixed fields: code, message). */
  private refusal(a: ApprovalRecord, actorId: string, code: string, reason: string | null): NewEvent {
    const base = { runId: a.runId, actorType: 'user' as const, actorId };
    if (code === 'review_failed') {
      return {
        ...base,
        type: 'tool.call.failed',
        data: {
          invocationId: a.invocationId!,
          errorCode: 'uncertain_marked_failed',
          message:
            'a human reviewer marked the ambiguous execution as failed; it may or may not have taken effect and will not be retried',
          retryable: false,
          latencyMs: 0,
        },
      };
    }
    return {
      ...base,
      type: 'tool.call.denied',
      data: {
        invocationId: a.invocationId!,
        reasonCode: code,
        explanation: approvalOutcomeText(code as typeof APPROVAL_DENIED, reason),
        policyVersion: a.policyVersion ?? 'unknown',
      },
    };
  }

  private async withRetries<T>(
    approvalId: string,
    principal: Principal,
    write: (a: ApprovalRecord, lastSequence: number) => Promise<T>,
  ): Promise<T> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const located = await this.deps.records.approval(approvalId, principal.tenantId);
      if (!located) throw new NotFoundError(`approval ${approvalId} not found`, { approvalId });
      // Read the session sequence BEFORE the state the decision rests on: the approval and run rows
      // change in the same transaction as the sequence, so a resolution committed after this read
      // makes our conditional append fail instead of overwriting it.
      const session = await this.deps.sessions.get(located.sessionId, {
        ...principal,
        tenantId: located.tenantId,
        principalId: (await this.deps.runs.get(located.runId, null))?.principalId ?? principal.principalId,
      });
      if (!session) throw new NotFoundError(`approval ${approvalId} not found`, { approvalId });
      const a = await this.deps.records.approval(approvalId, principal.tenantId);
      if (!a) throw new NotFoundError(`approval ${approvalId} not found`, { approvalId });
      if (a.status !== 'pending') {
        throw new ConflictError(`approval ${approvalId} is already ${a.status}`, {
          approvalId,
          status: a.status,
          resolvedBy: a.resolvedBy,
        });
      }
      // The approval was found in the principal's tenant; the approver need not own the run.
      const run = await this.deps.runs.get(a.runId, null);
      if (!run || run.tenantId !== a.tenantId) throw new NotFoundError(`run ${a.runId} not found`, { runId: a.runId });
      if (run.status !== 'waiting_for_approval') {
        throw new ConflictError(`run ${run.id} is ${run.status}, not waiting for approval`, {
          runId: run.id,
          status: run.status,
        });
      }
      try {
        return await write(a, session.lastSequence);
      } catch (e) {
        if (!(e instanceof ConcurrencyConflict)) throw e;
      }
    }
    throw new ConflictError(`approval ${approvalId} kept changing while it was being resolved; try again`, {
      approvalId,
    });
  }
}
