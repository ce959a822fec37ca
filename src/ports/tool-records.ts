import type { ApprovalActionKind } from '../domain/events/payloads';

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired';

/** The approvals read model as the application and runtime see it (plan §9.3). */
export interface ApprovalRecord {
  readonly id: string;
  readonly runId: string;
  readonly sessionId: string;
  readonly tenantId: string;
  readonly principalId: string;
  readonly invocationId: string | null;
  readonly status: ApprovalStatus;
  readonly actionKind: ApprovalActionKind;
  readonly toolName: string;
  readonly arguments: Record<string, unknown>;
  readonly actionSummary: string;
  readonly policyReason: string;
  readonly risk: string | null;
  readonly policyVersion: string | null;
  readonly expiresAt: string | null;
  readonly createdAt: string;
  readonly resolvedAt: string | null;
  readonly resolvedBy: string | null;
  readonly reason: string | null;
  /** Approve with edits (issue 33): the arguments the human approved instead of the model's; null otherwise. */
  readonly editedArguments?: Record<string, unknown> | null;
  /** When the reaper warned that the approval is about to expire (`approval.expiring`), or null. */
  readonly expiryWarnedAt?: string | null;
}

/** One tool invocation as the pipeline's recovery needs it. */
export interface InvocationRecord {
  readonly id: string;
  readonly runId: string;
  readonly sessionId: string;
  readonly tenantId: string;
  readonly step: number;
  readonly callId: string;
  readonly toolName: string;
  readonly arguments: Record<string, unknown>;
  readonly idempotencyKey: string;
  readonly status: string;
  readonly result: Record<string, unknown> | null;
  readonly effectSentAt: string | null;
}

/** Reads of the tool lifecycle read models (tool_invocations, approvals). */
export interface ToolRecordStore {
  /** An approval; with a tenant, only that tenant's (another tenant's approval does not exist). */
  approval(approvalId: string, tenantId: string | null): Promise<ApprovalRecord | null>;
  /** The newest approval (of a kind) for an invocation. */
  approvalForInvocation(invocationId: string, kind: ApprovalActionKind): Promise<ApprovalRecord | null>;
  /** Approvals of a tenant, newest first. */
  listApprovals(tenantId: string, status: ApprovalStatus | null, limit: number): Promise<ApprovalRecord[]>;
  /** Pending approvals of a run. */
  pendingApprovalsOfRun(runId: string): Promise<ApprovalRecord[]>;
  /**
   * A run's invocations without an outcome yet (proposed, authorized, waiting for approval, running,
   * uncertain), oldest first: the calls an interrupted run leaves open (issue 33).
   */
  openInvocationsOfRun(runId: string): Promise<{ invocationId: string; status: string }[]>;
  /** Pending approvals whose `expires_at` is at or before `nowIso`, oldest first. */
  expiredApprovals(nowIso: string, limit: number): Promise<ApprovalRecord[]>;
  /** Pending approvals expiring after `nowIso` but within `leadSeconds` of it, not warned yet, soonest first. */
  expiringApprovals(nowIso: string, leadSeconds: number, limit: number): Promise<ApprovalRecord[]>;
  invocation(invocationId: string, tenantId: string | null): Promise<InvocationRecord | null>;
  invocationByKey(idempotencyKey: string): Promise<InvocationRecord | null>;
  /**
   * Every invocation of a run with the same normalized call (tool name + arguments hash), oldest
   * first: the call's own invocation (its idempotency key covers run, tool and arguments hash) and
   * its earlier repeats (loop detection), in one read.
   */
  invocationsOfCall(runId: string, toolName: string, argumentsHash: string): Promise<InvocationRecord[]>;
  /** Succeeded invocations of `toolName` in a run, oldest first (workspace provenance). */
  succeededInvocations(runId: string, toolName: string): Promise<InvocationRecord[]>;
}

/** What `demo.external_write` would have sent; recorded instead of calling anything external. */
export interface DemoWriteRecord {
  readonly tenantId: string;
  readonly sessionId: string;
  readonly runId: string;
  readonly invocationId: string;
  readonly idempotencyKey: string;
  readonly target: string;
  readonly content: string;
}

export interface DemoWriteLog {
  record(w: DemoWriteRecord): Promise<{ id: number }>;
  count(runId: string | null): Promise<number>;
}
