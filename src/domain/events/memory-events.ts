import type { MemoryScope, MemorySensitivity, MemoryStatus, MemoryTrust } from '../memory/memory-record';
import { arr, int, nullable, num, obj, oneOfStr, str, uuid, type JsonSchema } from './schema-builders';

/** A memory's source event: its global id and its key in its session's stream. */
export interface SourceEventPayload {
  id: number;
  sessionId: string;
  sequence: number;
}

/**
 * Long-term memory events (issue 30, ADR 0035). `memory.recorded|updated|superseded|deleted|expired`
 * live in the owner principal's memory stream (a session of its own, see memory-stream.ts);
 * `memory.retrieved` is a run's retrieval trace, in the run's session.
 *
 * `subject` and `statement` are null only after the memory was deleted: the deletion erases the text
 * from every event that carried it, and the `memory.deleted` event itself names only the id.
 */
export interface MemoryEventPayloads {
  'memory.recorded': {
    memoryId: string;
    ownerPrincipalId: string;
    scope: MemoryScope;
    /** The agent of an `agent`-scoped memory; null otherwise. */
    agentId: string | null;
    subject: string | null;
    statement: string | null;
    /** The session events the statement came from (provenance), by global event id. */
    sourceEventIds: number[];
    /**
     * v2: the same events with their key in their session's stream, by which the memory API reads
     * them (ADR 0059). Empty when read from v1, which recorded ids only.
     */
    sourceEvents: SourceEventPayload[];
    sourceSessionId: string | null;
    sourceRunId: string | null;
    /** The tool invocation that proposed it (a retried call recognizes its own write); null for other writers. */
    invocationId: string | null;
    confidence: number;
    sensitivity: MemorySensitivity;
    trust: MemoryTrust;
    /** Where untrusted content came from (`tool:<name>`); null for the user's own words. */
    attribution: string | null;
    validFrom: string;
    expiresAt: string | null;
    status: Extract<MemoryStatus, 'active' | 'tentative' | 'conflicting'>;
    /** Live memories this one contradicts (kept, not overwritten). */
    conflictsWith: string[];
    /** The question for the user when two statements conflict at close confidence. */
    question: string | null;
  };
  /**
   * A change to a live memory: `reinforced` (the same statement again: confidence up, sources
   * added), `edited` (a user's edit, the user as actor), `conflicting` (a newer statement
   * contradicts it at close confidence). Only the fields that changed are present.
   */
  'memory.updated': {
    memoryId: string;
    change: 'reinforced' | 'edited' | 'conflicting';
    subject?: string | null;
    statement?: string | null;
    confidence?: number;
    sensitivity?: MemorySensitivity;
    trust?: MemoryTrust;
    status?: Extract<MemoryStatus, 'active' | 'tentative' | 'conflicting'>;
    expiresAt?: string | null;
    addedSourceEventIds?: number[];
    /** v2: `addedSourceEventIds` with their stream keys (ADR 0059); absent from v1. */
    addedSourceEvents?: SourceEventPayload[];
    conflictsWith?: string[];
    question?: string | null;
    invocationId?: string | null;
  };
  /** A newer statement about the same subject won; the old record stays, marked. */
  'memory.superseded': { memoryId: string; supersededBy: string };
  /** The memory is gone: its text was erased from the projection and from every event that carried it. */
  'memory.deleted': { memoryId: string };
  'memory.expired': { memoryId: string };
  /**
   * A retrieval trace: which memories a run's context snapshot (`snapshot`, once per session) or a
   * `memory.recall` call (`recall`) used, with their scores; `blocked` names memories the injection
   * scan withheld (shown to the model as `[BLOCKED memory <id>]`).
   */
  'memory.retrieved': {
    retrievalId: string;
    purpose: 'snapshot' | 'recall';
    query: string | null;
    invocationId: string | null;
    method: string;
    items: { memoryId: string; score: number; rank: number }[];
    blocked: string[];
    /**
     * A snapshot's section exactly as the model sees it in every run of the session (frozen: plan
     * §10.1); null for a recall, whose result is the tool call's own.
     */
    rendered: string | null;
  };
}

const scopes = oneOfStr(['principal', 'agent', 'tenant']);
const sensitivities = oneOfStr(['public', 'personal', 'sensitive']);
const trusts = oneOfStr(['user', 'inferred', 'external']);
const liveStatuses = oneOfStr(['active', 'tentative', 'conflicting']);
const confidence: JsonSchema = { type: 'number', minimum: 0, maximum: 1 };
const text = (max: number) => str({ minLength: 1, maxLength: max });
const eventIds = arr(int({ minimum: 1 }));
const sourceEvents = arr(obj({ id: int({ minimum: 1 }), sessionId: uuid(), sequence: int({ minimum: 1 }) }));

/** Optional fields of `memory.updated`: present when they changed. */
const updatedProps: Record<string, JsonSchema> = {
  memoryId: uuid(),
  change: oneOfStr(['reinforced', 'edited', 'conflicting']),
  subject: nullable(text(200)),
  statement: nullable(text(2000)),
  confidence,
  sensitivity: sensitivities,
  trust: trusts,
  status: liveStatuses,
  expiresAt: nullable(str()),
  addedSourceEventIds: eventIds,
  addedSourceEvents: sourceEvents,
  conflictsWith: arr(uuid()),
  question: nullable(str()),
  invocationId: nullable(uuid()),
};

export const MEMORY_EVENT_CATALOG = {
  'memory.recorded': {
    // v2: `sourceEvents`, the sources with their stream keys (ADR 0059); v1 upcasts to [].
    currentVersion: 2,
    schema: obj({
      memoryId: uuid(),
      ownerPrincipalId: str({ minLength: 1 }),
      scope: scopes,
      agentId: nullable(str({ minLength: 1 })),
      subject: nullable(text(200)),
      statement: nullable(text(2000)),
      sourceEventIds: eventIds,
      sourceEvents,
      sourceSessionId: nullable(uuid()),
      sourceRunId: nullable(uuid()),
      invocationId: nullable(uuid()),
      confidence,
      sensitivity: sensitivities,
      trust: trusts,
      attribution: nullable(str()),
      validFrom: str({ minLength: 1 }),
      expiresAt: nullable(str()),
      status: liveStatuses,
      conflictsWith: arr(uuid()),
      question: nullable(str()),
    }),
  },
  'memory.updated': {
    // v2: the optional `addedSourceEvents` (ADR 0059); a v1 payload is a valid v2 one without it.
    currentVersion: 2,
    schema: { type: 'object', properties: updatedProps, required: ['memoryId', 'change'], additionalProperties: false },
  },
  'memory.superseded': { currentVersion: 1, schema: obj({ memoryId: uuid(), supersededBy: uuid() }) },
  'memory.deleted': { currentVersion: 1, schema: obj({ memoryId: uuid() }) },
  'memory.expired': { currentVersion: 1, schema: obj({ memoryId: uuid() }) },
  'memory.retrieved': {
    currentVersion: 1,
    schema: obj({
      retrievalId: uuid(),
      purpose: oneOfStr(['snapshot', 'recall']),
      query: nullable(str({ maxLength: 2000 })),
      invocationId: nullable(uuid()),
      method: str({ minLength: 1 }),
      items: arr(obj({ memoryId: uuid(), score: num(), rank: int({ minimum: 1 }) })),
      blocked: arr(uuid()),
      rendered: nullable(str({ maxLength: 20000 })),
    }),
  },
} as const;
