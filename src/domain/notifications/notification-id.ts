import { stableUuidOf } from '../stable-id';

/**
 * A notification's id, derived from its dedupe key alone, so the inline fold and the projection
 * rebuild name the same notification alike and a trigger seen twice lands on the same row
 * (ADR 0036): a version-8 UUID of the key (stable-id.ts).
 */
export function notificationIdOf(dedupeKey: string): string {
  return stableUuidOf(dedupeKey);
}
