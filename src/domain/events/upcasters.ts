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
 * - tool.call.proposed v1 → v2 adds the optional `via: "bridge"` and `parentInvocationId` of a
 *   bridged call (plan §8.5); v1 has neither (the model's call), so the payload is unchanged.
 * - run.started v1 → v2 adds `spanId` (the run's trace root span, ADR 0015); v1 never traced, so null.
 * - model.request.started v2 → v3 adds `context` (the context build record, issue #11); v2 calls
 *   recorded none, so it is null.
 * - run.queued v2 → v3 adds `queuedBehind` and `multitaskStrategy` (issue 33); a v2 run was only ever
 *   queued with nothing ahead of it, so both are null.
 * - artifact.created v1 → v2 drops `storageUri` (storage locations never reach the log) and adds
 *   `source` and `expiresAt`; v1 was defined but never written, so `unknown` and null are only for form.
 * - schedule.occurrence.failed v1 → v2 adds `principalId` (the schedule's owner, issue 31); v1 did not
 *   record it, so null (no notification is derived from a v1 event).
 * - run.queued v1 → v2 adds `scopes`, the run's recorded scope set (ADR 0032). Every v1 run was
 *   executed with the local principal's fixed scope set whoever submitted it, so that is its set
 *   (frozen here as it was, not read from LOCAL_PRINCIPAL, which may change).
 * - approval.resolved v1 → v2 adds `edit` (approve with edits, issue 33); no v1 resolution edited
 *   anything, so it is null.
 * - run.queued v3 → v4 adds `scheduleId`, and run.completed / run.failed v1 → v2 add `scheduleId`
 *   (issue 31: a scheduled run's completion notifies); no earlier run recorded its schedule, so null.
 * - model.request.started v3 → v4 adds `fallbackFrom` (fallback models, issue 33); no v3 call was made
 *   on a fallback, so it is null.
 * - agent.mcp_grant.replaced v1 → v2 adds `rules` (per-tool argument rules, issue 34) to `grant` and
 *   to a non-null `previous`; no grant had rules before, so they are `{}`.
 * - memory.recorded v1 → v2 adds `sourceEvents` (each source's id with its session and sequence, ADR
 *   0059); v1 recorded ids only and the key cannot be known without the log, so it is [] and the
 *   memory API finds those sources by id. memory.updated v1 → v2 adds the optional
 *   `addedSourceEvents`; a v1 payload is unchanged.
 */
/** The scopes every run queued before ADR 0032 executed with (the local principal's set at the time). */
export const RUN_QUEUED_V1_SCOPES: readonly string[] = Object.freeze([
  'approvals.read',
  'approvals.resolve',
  'consent.admin',
  'consent.manage',
  'runs.read',
  'runs.write',
  'sessions.read',
  'sessions.write',
  'tools.use',
  'trajectories.export',
]);

export const UPCASTERS: Readonly<Record<string, Upcaster>> = {
  'user.message.created@1': (p) => ({
    messageId: p.messageId,
    content: [{ type: 'text', text: typeof p.text === 'string' ? p.text : '' }],
  }),
  'tool.call.completed@1': (p) => ({ ...p, trust: 'internal_tool' }),
  'approval.requested@1': (p) => ({ ...p, actionKind: 'tool_call' }),
  'model.request.started@1': (p) => ({ ...p, profileName: null, profileVersion: null, registryVersion: null }),
  'run.started@1': (p) => ({ ...p, spanId: null }),
  // v2 only adds the optional bridge fields; a v1 call was always the model's.
  'tool.call.proposed@1': (p) => p,
  'model.request.started@2': (p) => ({ ...p, context: null }),
  'model.request.started@3': (p) => ({ ...p, fallbackFrom: null }),
  'artifact.created@1': ({ storageUri: _dropped, ...p }) => ({ ...p, source: 'unknown', expiresAt: null }),
  'run.queued@1': (p) => ({ ...p, scopes: [...RUN_QUEUED_V1_SCOPES] }),
  'run.queued@2': (p) => ({ ...p, queuedBehind: null, multitaskStrategy: null }),
  'run.queued@3': (p) => ({ ...p, scheduleId: null }),
  'run.completed@1': (p) => ({ ...p, scheduleId: null }),
  'run.failed@1': (p) => ({ ...p, scheduleId: null }),
  'agent.mcp_grant.replaced@1': (p) => ({
    ...p,
    grant: withNoRules(p.grant),
    previous: p.previous === null || p.previous === undefined ? null : withNoRules(p.previous),
  }),
  'schedule.occurrence.failed@1': (p) => ({ ...p, principalId: null }),
  'approval.resolved@1': (p) => ({ ...p, edit: null }),
  'memory.recorded@1': (p) => ({ ...p, sourceEvents: [] }),
  // v2 only adds the optional `addedSourceEvents`; v1 recorded ids alone.
  'memory.updated@1': (p) => p,
};

function withNoRules(grant: unknown): Record<string, unknown> {
  return { ...(grant as Record<string, unknown>), rules: {} };
}

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
