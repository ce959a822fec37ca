/** Session read model (plan §6.3). */
export type SessionStatus = 'active' | 'deleted';

export interface SessionRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly principalId: string;
  readonly agentId: string;
  readonly agentVersion: number;
  readonly status: SessionStatus;
  readonly title: string | null;
  readonly lastSequence: number;
  readonly activeRunId: string | null;
  /** Runs queued behind the active one (`multitask_strategy: enqueue`), the next first. */
  readonly queuedRunIds: readonly string[];
  readonly lastRunId: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** A fork (issue 33): the session it was forked from and the parent sequence its history ends at; null otherwise. */
  readonly parentSessionId: string | null;
  readonly forkedAtSequence: number | null;
}
