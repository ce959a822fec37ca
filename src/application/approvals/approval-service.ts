import { approvalDecider, approvalStateOf } from '../../domain/deciders/approval';
import {
  decideApprovalResolution,
  type ApprovalResolutionState,
  type PendingApproval,
} from '../../domain/deciders/approval-resolution';
import { runDecider, runStateOf } from '../../domain/deciders/run';
import { AuthorizationError, ConflictError, NotFoundError, ValidationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { ApprovalEditChecks, EditIssue } from '../../ports/approval-edits';
import type { Clock } from '../../ports/clock';
import type { EventStore } from '../../ports/event-store';
import type { RunRepository } from '../../ports/run-store';
import type { SessionRepository } from '../../ports/session-repository';
import type { ApprovalRecord, ToolRecordStore } from '../../ports/tool-records';
import { handleCommand, type LoadedState } from '../command-handler';

export type ApprovalDecision = 'approve_once' | 'approve_with_edits' | 'deny';
export const APPROVAL_DECISIONS: readonly ApprovalDecision[] = ['approve_once', 'approve_with_edits', 'deny'];

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
  /** Schema and policy checks of edited arguments; without them `approve_with_edits` is refused. */
  readonly edits?: ApprovalEditChecks;
}

const MAX_REASON_CHARS = 1000;

/** `arguments` comes with `approve_with_edits` (a JSON object) and with nothing else. */
function checkEditShape(decision: ApprovalDecision, edited: unknown): void {
  const given = edited !== undefined && edited !== null;
  if (decision !== 'approve_with_edits') {
    if (given)
      throw new ValidationError('arguments may be given only with decision approve_with_edits', { field: 'arguments' });
    return;
  }
  if (!given || typeof edited !== 'object' || Array.isArray(edited))
    throw new ValidationError('approve_with_edits needs arguments: a JSON object of the edited tool arguments', {
      field: 'arguments',
    });
}

/** A schema refusal naming the first failing field (`arguments.text`) and listing every issue. */
function editRefused(toolName: string, issues: readonly EditIssue[]): ValidationError {
  const field = (path: string) => `arguments${path.replace(/\//g, '.')}`;
  const first = issues[0] ?? { path: '', message: 'is invalid' };
  const all = issues.map((i) => `${field(i.path)} ${i.message}`).join('; ');
  return new ValidationError(`edited arguments for ${toolName} are invalid: ${all}; the approval stays pending`, {
    field: field(first.path),
    issues: issues.map((i) => ({ field: field(i.path), message: i.message })),
  });
}

/** The reaper's principal: a system actor inside the approval's own tenant. */
function systemPrincipal(tenantId: string, principalId: string): Principal {
  return { tenantId, principalId, roles: new Set(['system']), scopes: new Set(['approvals.resolve']) };
}

/** An approval's read-model row as the approval deciders see it (its fold). */
export function pendingApprovalOf(a: ApprovalRecord): PendingApproval {
  return {
    state: approvalStateOf(a),
    runId: a.runId,
    actionKind: a.actionKind,
    invocationId: a.invocationId,
    policyVersion: a.policyVersion,
  };
}

interface ApprovalAndRun extends ApprovalResolutionState {
  readonly record: ApprovalRecord;
}

/**
 * Approval lifecycle edges handled by the application, not the worker loop (plan §9.3): human
 * resolution and expiry (reaping on cancellation is the cancel command's, domain/deciders/run-cancel.ts).
 * Every write is one append conditional on the session sequence that was read, so the first
 * resolution wins and a concurrent second one sees the approval resolved and gets a ConflictError.
 * Resolution re-queues the run (`run.resumed`, whose commit NOTIFYs run_ready); the worker
 * revalidates policy before executing anything.
 */
export class ApprovalService {
  constructor(private readonly deps: ApprovalDeps) {}

  async resolve(
    principal: Principal,
    approvalId: string,
    decision: unknown,
    reason: unknown,
    edited?: unknown,
  ): Promise<ResolvedApproval> {
    if (!APPROVAL_DECISIONS.includes(decision as ApprovalDecision)) {
      throw new ValidationError(`decision must be one of ${APPROVAL_DECISIONS.join(', ')}`, { field: 'decision' });
    }
    const choice = decision as ApprovalDecision;
    checkEditShape(choice, edited);
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
    return handleCommand(this.deps.store, {
      load: () => this.load(approvalId, principal),
      decide: (state) =>
        decideApprovalResolution(
          {
            kind: 'ResolvePendingApproval',
            decision: choice,
            principalId: principal.principalId,
            reason: why,
            // Checked only where an edit can apply; the decider refuses the rest (resolved, a review).
            ...(choice === 'approve_with_edits' &&
            state.record.status === 'pending' &&
            state.record.actionKind === 'tool_call'
              ? { edited: this.checkedEdit(state.record, edited as Record<string, unknown>) }
              : {}),
          },
          state,
        ),
      result: ({ state: { record: a } }) => ({
        approvalId: a.id,
        runId: a.runId,
        status: choice === 'deny' ? 'denied' : 'approved',
        run: 'resumed',
      }),
      exhausted: () => this.exhausted(approvalId),
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
          await handleCommand(this.deps.store, {
            load: () => this.load(candidate.id, actor),
            decide: (state) =>
              decideApprovalResolution(
                {
                  kind: 'ExpirePendingApproval',
                  reaperId: actor.principalId,
                  nowMs: this.deps.clock.nowMs(),
                  onExpiry,
                },
                state,
              ),
            result: ({ state: { record: a } }) => ({
              approvalId: a.id,
              runId: a.runId,
              status: 'expired',
              run: onExpiry === 'fail_run' ? 'finished' : 'resumed',
            }),
            exhausted: () => this.exhausted(candidate.id),
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
   * Warns, once per approval, that a pending approval expires within `leadSeconds` (issue 31):
   * appends `approval.expiring`, whose notification ("expires in N minutes") the append writes.
   * Returns the approvals it warned about.
   */
  async warnExpiring(leadSeconds: number, limit = 100): Promise<string[]> {
    const due = await this.deps.records.expiringApprovals(this.deps.clock.nowIso(), leadSeconds, limit);
    const warned: string[] = [];
    for (const candidate of due) {
      const actor = systemPrincipal(candidate.tenantId, 'system:approval-reaper');
      try {
        await handleCommand(this.deps.store, {
          load: () => this.load(candidate.id, actor),
          decide: ({ record: a, approval }) =>
            approvalDecider.decide(
              {
                kind: 'WarnApprovalExpiring',
                runId: a.runId,
                approvalId: a.id,
                actor: { actorType: 'system', actorId: actor.principalId },
                nowMs: this.deps.clock.nowMs(),
                leadSeconds,
                principalId: a.principalId,
                toolName: a.toolName,
              },
              approval.state,
            ),
          result: () => undefined,
          exhausted: () => this.exhausted(candidate.id),
        });
        warned.push(candidate.id);
      } catch (e) {
        // Resolved, expired or warned meanwhile: nothing left to warn about.
        if (!(e instanceof ConflictError) && !(e instanceof NotFoundError)) throw e;
      }
    }
    return warned;
  }

  async get(principal: Principal, approvalId: string): Promise<ApprovalRecord> {
    const a = await this.deps.records.approval(approvalId, principal.tenantId);
    if (!a) throw new NotFoundError(`approval ${approvalId} not found`, { approvalId });
    return a;
  }

  list(principal: Principal, status: ApprovalRecord['status'] | null, limit = 100): Promise<ApprovalRecord[]> {
    return this.deps.records.listApprovals(principal.tenantId, status, Math.max(1, Math.min(limit, 500)));
  }

  /**
   * The edited arguments checked against the tool's schema and the policy (ADR 0044), or the
   * refusal: the field that fails the schema, or why the policy would not let the edited call run.
   */
  private checkedEdit(a: ApprovalRecord, args: Record<string, unknown>) {
    if (!this.deps.edits)
      throw new ValidationError('this process cannot check edited arguments', { field: 'decision' });
    const v = this.deps.edits.check(a.toolName, a.arguments, args);
    switch (v.kind) {
      case 'ok':
        return { arguments: args, originalHash: v.originalHash, editedHash: v.editedHash };
      case 'unknown_tool':
        throw new ConflictError(`tool ${a.toolName} is no longer registered; its arguments cannot be edited`, {
          field: 'arguments',
          tool: a.toolName,
        });
      case 'invalid':
        throw editRefused(a.toolName, v.issues);
      case 'denied':
        throw new AuthorizationError(
          `the edited call would be denied by policy (${v.reasonCode}): ${v.explanation}; the approval stays pending`,
          { field: 'arguments', reason_code: v.reasonCode },
        );
      default:
        return v satisfies never;
    }
  }

  private exhausted(approvalId: string): ConflictError {
    return new ConflictError(`approval ${approvalId} kept changing while it was being resolved; try again`, {
      approvalId,
    });
  }

  /** The approval and its run, with the session sequence read before them. */
  private async load(approvalId: string, principal: Principal): Promise<LoadedState<ApprovalAndRun>> {
    const notFound = () => new NotFoundError(`approval ${approvalId} not found`, { approvalId });
    const located = await this.deps.records.approval(approvalId, principal.tenantId);
    if (!located) throw notFound();
    // Read the session sequence BEFORE the state the decision rests on: the approval and run rows
    // change in the same transaction as the sequence, so a resolution committed after this read
    // makes our conditional append fail instead of overwriting it.
    const session = await this.deps.sessions.get(located.sessionId, {
      ...principal,
      tenantId: located.tenantId,
      principalId: (await this.deps.runs.get(located.runId, null))?.principalId ?? principal.principalId,
    });
    if (!session) throw notFound();
    const a = await this.deps.records.approval(approvalId, principal.tenantId);
    if (!a) throw notFound();
    // The approval was found in the principal's tenant; the approver need not own the run. An
    // approval already resolved is refused as such (ConflictError) whatever became of its run.
    const run = a.status === 'pending' ? await this.deps.runs.get(a.runId, null) : null;
    if (a.status === 'pending' && (!run || run.tenantId !== a.tenantId))
      throw new NotFoundError(`run ${a.runId} not found`, { runId: a.runId });
    return {
      sessionId: a.sessionId,
      tenantId: a.tenantId,
      state: {
        record: a,
        approval: pendingApprovalOf(a),
        run: run ? runStateOf(run) : runDecider.initialState(),
      },
      expectedSequence: session.lastSequence,
    };
  }
}
