import { ConflictError, InvalidStateTransition, ValidationError } from '../errors';
import type { ApprovalActionKind, ApprovalEdit, EventPayloads } from '../events/payloads';
import { accept, event, refuse, type Actor, type Decider, type Decision, type DecidedEvent } from './decider';

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired';

export interface ApprovalState {
  readonly approvalId: string | null;
  readonly status: ApprovalStatus | 'absent';
  readonly resolvedBy: string | null;
  readonly expiresAt: string | null;
  /** The "about to expire" warning was given (`approval.expiring`). */
  readonly warned: boolean;
}

/** The state an approval's read-model row stands for (the approvals projection folds the same events). */
export function approvalStateOf(a: {
  readonly id: string;
  readonly status: ApprovalStatus;
  readonly resolvedBy: string | null;
  readonly expiresAt: string | null;
  readonly expiryWarnedAt?: string | null;
}): ApprovalState {
  return {
    approvalId: a.id,
    status: a.status,
    resolvedBy: a.resolvedBy,
    expiresAt: a.expiresAt,
    warned: (a.expiryWarnedAt ?? null) !== null,
  };
}

interface ApprovalCommandBase {
  readonly runId: string;
  readonly approvalId: string;
  readonly actor: Actor;
}

export interface RequestApproval extends ApprovalCommandBase {
  readonly kind: 'RequestApproval';
  readonly actionKind: ApprovalActionKind;
  readonly principalId: string;
  readonly invocationId: string | null;
  readonly toolName: string;
  readonly arguments: Record<string, unknown>;
  readonly actionSummary: string;
  readonly policyReason: string;
  readonly risk: string;
  readonly expiresAt: string | null;
  readonly policyVersion: string;
}

/** A human's answer (plan §9.3). The first resolution wins; a later one is a ConflictError. */
export interface ResolveApproval extends ApprovalCommandBase {
  readonly kind: 'ResolveApproval';
  readonly decision: 'approved' | 'denied';
  readonly resolvedBy: string;
  readonly reason: string | null;
  /** Approve with edits (issue 33): the arguments the tool runs with instead; only with `approved`. */
  readonly edit?: ApprovalEdit | null;
}

/** The reaper's: a pending approval past its `expires_at` (judged at `nowMs`, from the command). */
export interface ExpireApproval extends ApprovalCommandBase {
  readonly kind: 'ExpireApproval';
  readonly nowMs: number;
}

/**
 * The reaper's: a pending approval expires within `leadSeconds` of `nowMs` (issue 31). Given once;
 * refused when there is no deadline, it is not near yet, it has passed, or the warning was given.
 */
export interface WarnApprovalExpiring extends ApprovalCommandBase {
  readonly kind: 'WarnApprovalExpiring';
  readonly nowMs: number;
  readonly leadSeconds: number;
  readonly principalId: string;
  readonly toolName: string;
}

export type ApprovalCommand = RequestApproval | ResolveApproval | ExpireApproval | WarnApprovalExpiring;

function resolved(cmd: ApprovalCommandBase, data: Omit<EventPayloads['approval.resolved'], 'approvalId'>): Decision {
  return accept(
    event('approval.resolved', { approvalId: cmd.approvalId, ...data }, { runId: cmd.runId, ...cmd.actor }),
  );
}

function warn(cmd: WarnApprovalExpiring, state: ApprovalState): Decision {
  const deadline = state.expiresAt ? Date.parse(state.expiresAt) : NaN;
  if (state.warned || Number.isNaN(deadline) || deadline <= cmd.nowMs || deadline - cmd.leadSeconds * 1000 > cmd.nowMs)
    return refuse(
      new ConflictError(`approval ${cmd.approvalId} is not about to expire`, { approvalId: cmd.approvalId }),
    );
  const { approvalId, principalId, toolName, leadSeconds } = cmd;
  return accept(
    event(
      'approval.expiring',
      { approvalId, principalId, toolName, expiresAt: state.expiresAt!, leadSeconds },
      { runId: cmd.runId, ...cmd.actor },
    ),
  );
}

function decide(cmd: ApprovalCommand, state: ApprovalState): Decision {
  if (cmd.kind === 'RequestApproval') {
    if (state.status !== 'absent')
      return refuse(new InvalidStateTransition(`approval ${cmd.approvalId} was requested already`, {}));
    const { approvalId, actionKind, principalId, invocationId, toolName, actionSummary, policyReason, risk } = cmd;
    const data = { approvalId, actionKind, principalId, invocationId, toolName, arguments: cmd.arguments };
    const more = { actionSummary, policyReason, risk, expiresAt: cmd.expiresAt, policyVersion: cmd.policyVersion };
    return accept(event('approval.requested', { ...data, ...more }, { runId: cmd.runId, ...cmd.actor }));
  }
  if (state.status !== 'pending') {
    return refuse(
      new ConflictError(`approval ${cmd.approvalId} is already ${state.status}`, {
        approvalId: cmd.approvalId,
        status: state.status,
        resolvedBy: state.resolvedBy,
      }),
    );
  }
  if (cmd.kind === 'WarnApprovalExpiring') return warn(cmd, state);
  if (cmd.kind === 'ExpireApproval') {
    if (!state.expiresAt || Date.parse(state.expiresAt) > cmd.nowMs)
      return refuse(new ConflictError('not expired', {}));
    const by = cmd.actor.actorId ?? 'system';
    return resolved(cmd, { decision: 'expired', resolvedBy: by, reason: 'approval expired', edit: null });
  }
  const edit = cmd.edit ?? null;
  if (edit && cmd.decision !== 'approved')
    return refuse(new ValidationError('only an approval can carry edited arguments', { field: 'arguments' }));
  return resolved(cmd, { decision: cmd.decision, resolvedBy: cmd.resolvedBy, reason: cmd.reason, edit });
}

function evolve(state: ApprovalState, e: DecidedEvent): ApprovalState {
  if (e.type === 'approval.requested')
    return {
      approvalId: e.data.approvalId,
      status: 'pending',
      resolvedBy: null,
      expiresAt: e.data.expiresAt,
      warned: false,
    };
  if (e.type === 'approval.expiring' && e.data.approvalId === state.approvalId) return { ...state, warned: true };
  if (e.type === 'approval.resolved' && e.data.approvalId === state.approvalId)
    return { ...state, status: e.data.decision, resolvedBy: e.data.resolvedBy };
  return state;
}

/** An approval (plan §9.3): requested once, resolved once (approved, denied or expired). */
export const approvalDecider: Decider<ApprovalCommand, ApprovalState> = {
  initialState: () => ({ approvalId: null, status: 'absent', resolvedBy: null, expiresAt: null, warned: false }),
  evolve,
  decide,
};
