import { CorruptEventError } from '../errors';
import { EVENT_CATALOG, isKnownEventType } from './catalog';

/** Turns a payload of `(type, fromVersion)` into the shape of `fromVersion + 1`. Pure. */
export type Upcaster = (payload: Record<string, unknown>) => Record<string, unknown>;

/**
 * The upcaster registry, keyed `type@fromVersion`. Every read goes through `upcast`, so code only
 * ever sees the newest shape. History:
 * - user.message.created v1 `{messageId, text}` → v2 `{messageId, content: [{type:'text', text}]}`
 *   (content parts make room for artifact references, plan §6.6).
 * - tool.call.completed v1 → v2 adds `trust` (plan §11.2); every v1 result came from a builtin
 *   internal tool (calculator, clock), so it is `internal_tool`.
 * - approval.requested v1 → v2 adds `actionKind`; v1 approvals were all policy approvals of a tool call.
 * - model.request.started v1 → v2 adds `profileName`, `profileVersion` and `registryVersion`; v1
 *   never recorded which profile or registry routed the call, so they are null (unknown).
 * - run.started v1 → v2 adds `spanId` (the run's trace root span, ADR 0015); v1 never traced, so null.
 * - model.request.started v2 → v3 adds `context` (the context build record, issue #11); v2 calls
 *   recorded none, so it is null.
 * - artifact.created v1 → v2 drops `storageUri` (storage locations never reach the log) and adds
 *   `source` and `expiresAt`; v1 was defined but never written, so `unknown` and null are only for form.
 */
export const UPCASTERS: Readonly<Record<string, Upcaster>> = {
  'user.message.created@1': (p) => ({
    messageId: p.messageId,
    content: [{ type: 'text', text: typeof p.text === 'string' ? p.text : '' }],
  }),
  'tool.call.completed@1': (p) => ({ ...p, trust: 'internal_tool' }),
  'approval.requested@1': (p) => ({ ...p, actionKind: 'tool_call' }),
  'model.request.started@1': (p) => ({ ...p, profileName: null, profileVersion: null, registryVersion: null }),
  'run.started@1': (p) => ({ ...p, spanId: null }),
  'model.request.started@2': (p) => ({ ...p, context: null }),
  'artifact.created@1': ({ storageUri: _dropped, ...p }) => ({ ...p, source: 'unknown', expiresAt: null }),
};

/** Upcasts a stored payload to the current version, or names the event id when it cannot. */
export function upcast(
  eventId: number,
  type: string,
  version: number,
  payload: unknown,
): { version: number; payload: Record<string, unknown> } {
  if (!isKnownEventType(type)) {
    throw new CorruptEventError(`event ${eventId} has unknown type "${type}"`, { eventId, type });
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    throw new CorruptEventError(`event ${eventId} (${type}) has a payload that is not a JSON object`, {
      eventId,
      type,
    });
  }
  const target = EVENT_CATALOG[type].currentVersion;
  if (!Number.isInteger(version) || version < 1 || version > target) {
    throw new CorruptEventError(
      `event ${eventId} (${type}) has schema version ${version}; this build reads versions 1..${target}`,
      { eventId, type, version },
    );
  }
  let current = payload as Record<string, unknown>;
  for (let v = version; v < target; v++) {
    const step = UPCASTERS[`${type}@${v}`];
    if (!step) {
      throw new CorruptEventError(`event ${eventId} (${type}) v${v} has no upcaster to v${v + 1}`, {
        eventId,
        type,
        version: v,
      });
    }
    current = step(current);
  }
  return { version: target, payload: current };
}
