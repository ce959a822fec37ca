import type { ContentPart } from '../domain/conversation/items';
import type { Principal } from '../domain/principal';
import type { SessionRecord } from '../domain/session';

/** A keyset page: `nextCursor` is opaque and null on the last page. */
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor: string | null;
}

/** A durable conversation message: a user message or a completed assistant message. */
export interface SessionMessage {
  readonly sequence: number;
  readonly role: 'user' | 'assistant';
  readonly messageId: string;
  readonly runId: string | null;
  readonly content: readonly ContentPart[];
  readonly createdAt: string;
}

/** One session of a fork tree (issue 33): its fork point and the forks taken from it, oldest first. */
export interface ForkNode {
  readonly id: string;
  readonly title: string | null;
  readonly status: 'active' | 'deleted';
  readonly parentSessionId: string | null;
  readonly forkedAtSequence: number | null;
  readonly createdAt: string;
  readonly children: readonly ForkNode[];
}

/**
 * Read side of sessions for the API. The principal is a query argument: every read is limited to
 * the principal's own tenant and its own sessions, so anything else is simply "not found".
 */
export interface SessionReadModel {
  /**
   * The principal's live (not deleted) sessions, newest activity first (updated_at DESC, id DESC);
   * with `search` (words), only those whose title or user/assistant message text contains every
   * word (as a word prefix).
   */
  list(
    principal: Principal,
    limit: number,
    cursor: string | null,
    search?: string | null,
  ): Promise<Page<SessionRecord>>;
  /**
   * User and completed assistant messages of one session, oldest first; null when the session is not
   * the principal's. A fork's transcript starts with the messages it inherits from its parent (up to
   * its fork point, through every ancestor), then its own.
   */
  messages(
    sessionId: string,
    principal: Principal,
    limit: number,
    cursor: string | null,
  ): Promise<Page<SessionMessage> | null>;
  /** The fork tree `sessionId` belongs to, from its root; null when the session is not the principal's. */
  forkTree(sessionId: string, principal: Principal): Promise<ForkNode | null>;
  /** Non-terminal runs of a tenant (for the per-tenant concurrent-run ceiling). */
  activeRunCount(tenantId: string): Promise<number>;
}

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired';

export interface ApprovalRecord {
  readonly id: string;
  readonly runId: string;
  readonly sessionId: string;
  readonly principalId: string;
  readonly toolInvocationId: string | null;
  readonly status: ApprovalStatus;
  readonly actionKind: string;
  readonly risk: string | null;
  readonly request: Record<string, unknown>;
  readonly resolution: Record<string, unknown> | null;
  readonly policyVersion: string | null;
  readonly expiresAt: string | null;
  readonly createdAt: string;
  readonly resolvedAt: string | null;
  readonly resolvedBy: string | null;
}

/**
 * Whose approvals a reader sees: always one tenant; one principal's, or every principal's of the
 * tenant when `principalId` is null (an approver, `approvals.review`; see `approvalReach`).
 */
export interface ApprovalReach {
  readonly tenantId: string;
  readonly principalId: string | null;
}

/** Read side of approvals (the `approvals` projection), scoped by tenant and, unless an approver reads, principal. */
export interface ApprovalReadModel {
  list(
    reach: ApprovalReach,
    filter: 'pending' | 'resolved' | null,
    limit: number,
    cursor: string | null,
  ): Promise<Page<ApprovalRecord>>;
  get(approvalId: string, reach: ApprovalReach): Promise<ApprovalRecord | null>;
}
