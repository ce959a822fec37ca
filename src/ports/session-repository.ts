import type { Principal } from '../domain/principal';
import type { SessionRecord } from '../domain/session';

export interface SessionRepository {
  /** The session if it exists in the principal's tenant (another tenant's session is "not found"). */
  get(sessionId: string, principal: Principal): Promise<SessionRecord | null>;
  /** The run recorded under a client idempotency key, with the hash of the request that created it. */
  idempotentSubmission(
    principal: Principal,
    key: string,
  ): Promise<{ runId: string; sessionId: string; requestHash: string } | null>;
}
