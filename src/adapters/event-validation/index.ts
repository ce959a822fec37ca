import Ajv, { type ValidateFunction } from 'ajv';
import { EVENT_CATALOG, isKnownEventType } from '../../domain/events/catalog';
import type { EventType, NewEvent, StoredEvent } from '../../domain/events/payloads';
import { findSecret } from '../../domain/events/secret-scan';
import { toStorableText } from '../../domain/events/storable-text';
import { InvalidEventPayloadError, SecretInPayloadError, UnknownEventTypeError } from '../../domain/errors';

/**
 * What every event store checks of an event before it stores it (docs/events.md), whatever it stores
 * it in: the PostgreSQL store and the in-memory one refuse alike.
 */
const ajv = new Ajv({ allErrors: true, strict: false });
const validators = new Map<string, ValidateFunction>();
for (const [type, entry] of Object.entries(EVENT_CATALOG)) validators.set(type, ajv.compile(entry.schema));

/**
 * Refuses, before anything is written, an unknown type, a payload that does not match its schema,
 * or a payload containing something that looks like a credential. Returns the version to store.
 */
export function encodeEvent(
  e: NewEvent,
  index: number,
): { type: EventType; version: number; data: NewEvent['data']; replacedText: string[] } {
  if (!isKnownEventType(e.type)) {
    throw new UnknownEventTypeError(`event #${index} has unknown type "${String(e.type)}"`, { index, type: e.type });
  }
  const validate = validators.get(e.type)!;
  if (!validate(e.data)) {
    const first = validate.errors?.[0];
    const field = first ? `${first.instancePath || '(root)'} ${first.message ?? ''}`.trim() : 'payload';
    throw new InvalidEventPayloadError(`event #${index} (${e.type}) is invalid: ${field}`, {
      index,
      type: e.type,
      errors: (validate.errors ?? []).map((x) => ({ path: x.instancePath, message: x.message })),
    });
  }
  const secret = findSecret(e.data);
  if (secret) {
    throw new SecretInPayloadError(
      `event #${index} (${e.type}) contains what looks like a credential (${secret.kind}) at ${secret.path}; it was not stored`,
      { index, type: e.type, path: secret.path, kind: secret.kind },
    );
  }
  // Text from a model, a tool or an MCP server may hold a NUL or a lone surrogate, which PostgreSQL
  // cannot store: stored with U+FFFD in their place (ADR 0041) rather than failing the append (and the run).
  const storable = toStorableText(e.data);
  return {
    type: e.type,
    version: EVENT_CATALOG[e.type].currentVersion,
    data: storable.value,
    replacedText: storable.replaced,
  };
}

/** A batch to append: its events and the session and tenant every one of them is stamped with. */
export interface DraftBatch {
  readonly sessionId: string;
  readonly tenantId: string;
  readonly events: readonly NewEvent[];
}

/**
 * The batch's events as a store keeps them, each checked by `encodeEvent`, before their ids and
 * sequences are known (0 here): one shape for the PostgreSQL store and the in-memory one. An event
 * without its own trace id takes `traceId`.
 */
export function draftEvents(batch: DraftBatch, createdAt: string, traceId: string | null): StoredEvent[] {
  return batch.events.map((e, i) => {
    const { type, version, data } = encodeEvent(e, i);
    return {
      id: 0,
      sessionId: batch.sessionId,
      runId: e.runId ?? null,
      sequence: 0,
      type,
      schemaVersion: version,
      data,
      actorType: e.actorType ?? 'system',
      actorId: e.actorId ?? null,
      tenantId: batch.tenantId,
      traceId: e.traceId ?? traceId,
      createdAt,
    } as StoredEvent;
  });
}
