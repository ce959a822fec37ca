import type { CreateSession } from '../deciders/session';
import { stableUuidOf } from '../stable-id';

/** The principal a memory stream session is recorded under: no user lists or reads it as a conversation. */
export const MEMORY_STREAM_PRINCIPAL = 'system:memory';

/**
 * The session whose log holds one owner's memory records (`memory.recorded|updated|superseded|
 * deleted|expired`): a stable id per (tenant, owner principal). One stream per owner makes the
 * owner's memories one aggregate: writes are serialized on it, deduplication and conflicts are
 * decided against a consistent view, and every projection row belongs to one session (the rebuild's
 * unit), as ADR 0035 explains.
 */
export function memoryStreamIdOf(tenantId: string, ownerPrincipalId: string): string {
  return stableUuidOf(`memory-stream\u0000${tenantId}\u0000${ownerPrincipalId}`);
}

/** The `CreateSession` that opens an owner's memory stream on its first write. */
export function createMemoryStream(ownerPrincipalId: string): CreateSession {
  return {
    kind: 'CreateSession',
    actor: { actorType: 'system' },
    agentId: 'memory',
    agentVersion: 1,
    principalId: MEMORY_STREAM_PRINCIPAL,
    title: `Memory of ${ownerPrincipalId}`.slice(0, 500),
    metadata: { stream: 'memory', ownerPrincipalId },
  };
}
