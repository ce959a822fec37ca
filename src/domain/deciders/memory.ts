import { AuthorizationError, NotFoundError, ValidationError } from '../errors';
import type { SourceEventPayload } from '../events/memory-events';
import type { EventPayloads, NewEvent } from '../events/payloads';
import {
  CONFLICT_MARGIN,
  DEFAULT_CONFIDENCE,
  EXTERNAL_CONFIDENCE_CEILING,
  LIVE_STATUSES,
  MAX_STATEMENT_CHARS,
  MAX_SUBJECT_CHARS,
  MEMORY_SCOPES,
  MEMORY_SENSITIVITIES,
  deriveSubject,
  injectionIn,
  isScope,
  isSensitivity,
  roundConfidence,
  statementKey,
  subjectKey,
  textProblem,
  unrememberable,
  type MemoryScope,
  type MemorySensitivity,
  type MemoryStatus,
  type MemoryTrust,
} from '../memory/memory-record';
import { distinctSources, type SourceEvent } from '../memory/provenance';
import { accept, event, refuse, type Actor, type Decider, type Decision, type DecidedEvent } from './decider';

/** What the decider knows of one memory: enough to dedupe, detect a conflict and check ownership. */
export interface MemoryView {
  readonly id: string;
  readonly ownerPrincipalId: string;
  readonly scope: MemoryScope;
  readonly agentId: string | null;
  readonly subjectKey: string | null;
  readonly statementKey: string | null;
  readonly statement: string | null;
  readonly status: MemoryStatus;
  readonly confidence: number;
  readonly trust: MemoryTrust;
  readonly conflictsWith: readonly string[];
  /** The tool invocation that last wrote it (a retried call finds its own write here). */
  readonly lastInvocationId: string | null;
}

/**
 * The memories of one owner's stream that a command concerns (the adapter loads them from the
 * read model under the stream's lock: the target, or the live ones about the same subject).
 */
export interface MemoryState {
  readonly memories: ReadonlyMap<string, MemoryView>;
}

/** What the deployment's policy allows a write (config/policies, `memory:`). */
export interface MemoryWritePolicy {
  /** `sensitive` memories need an explicit policy to be stored. */
  readonly allowSensitive: boolean;
  /** Only principals with an admin or owner role may write tenant-wide memories. */
  readonly allowTenantScope: boolean;
}

/** A statement proposed for memory, with provenance decided by deterministic code. */
export interface MemoryCandidate {
  readonly subject?: string | null;
  readonly statement: string;
  readonly scope: string;
  readonly agentId: string | null;
  readonly sensitivity: string;
  readonly trust: MemoryTrust;
  readonly attribution: string | null;
  readonly confidence?: number | null;
  /** The session events it came from, by id and by their key in their session's stream. */
  readonly sourceEvents: readonly SourceEvent[];
  readonly sourceSessionId: string | null;
  readonly sourceRunId: string | null;
  readonly invocationId: string | null;
  readonly expiresAt?: string | null;
}

export interface RecordMemory {
  readonly kind: 'RecordMemory';
  readonly actor: Actor;
  /** The id a new record gets (ids come in with the command). */
  readonly memoryId: string;
  readonly ownerPrincipalId: string;
  readonly candidate: MemoryCandidate;
  readonly policy: MemoryWritePolicy;
  readonly nowIso: string;
}

export interface MemoryChanges {
  readonly subject?: unknown;
  readonly statement?: unknown;
  readonly sensitivity?: unknown;
  readonly confidence?: unknown;
  readonly expiresAt?: unknown;
  /** `active` confirms a conflicting or tentative memory (its rivals are superseded). */
  readonly status?: unknown;
}

/** A user's edit (PATCH /v1/memories/{id}, `agent memory edit`): recorded with the user as actor. */
export interface EditMemory {
  readonly kind: 'EditMemory';
  readonly actor: Actor;
  readonly memoryId: string;
  readonly byPrincipalId: string;
  readonly changes: MemoryChanges;
  readonly policy: MemoryWritePolicy;
}

export interface DeleteMemory {
  readonly kind: 'DeleteMemory';
  readonly actor: Actor;
  readonly memoryId: string;
  readonly byPrincipalId: string;
}

export interface ExpireMemory {
  readonly kind: 'ExpireMemory';
  readonly actor: Actor;
  readonly memoryId: string;
}

/**
 * A retrieval trace (`memory.retrieved`), in the run's session: a context snapshot or a
 * `memory.recall` call. Stateless: it records what was retrieved, with the scores.
 */
export interface RecordRetrieval {
  readonly kind: 'RecordRetrieval';
  readonly actor: Actor;
  readonly runId: string | null;
  readonly retrieval: EventPayloads['memory.retrieved'];
}

export type MemoryCommand = RecordMemory | EditMemory | DeleteMemory | ExpireMemory | RecordRetrieval;

type Recorded = EventPayloads['memory.recorded'];

/** Sources as the event records them: once each, in id order, exactly their id and stream key. */
const sourceEventData = (sources: readonly SourceEvent[]): SourceEventPayload[] =>
  distinctSources(sources).map((s) => ({ id: s.id, sessionId: s.sessionId, sequence: s.sequence }));

const isLive = (m: MemoryView): boolean => LIVE_STATUSES.includes(m.status);
const TRUST_RANK: Readonly<Record<MemoryTrust, number>> = { external: 0, inferred: 1, user: 2 };

/** The validated fields of a candidate, or the refusal. */
function validated(
  c: MemoryCandidate,
  policy: MemoryWritePolicy,
):
  | { ok: true; subject: string; statement: string; scope: MemoryScope; sensitivity: MemorySensitivity }
  | { ok: false; error: ValidationError | AuthorizationError } {
  const statementError = textProblem('statement', c.statement, MAX_STATEMENT_CHARS);
  if (statementError) return { ok: false, error: new ValidationError(statementError, { field: 'statement' }) };
  const statement = c.statement.trim();
  const subject = (
    typeof c.subject === 'string' && c.subject.trim() !== '' ? c.subject : deriveSubject(statement)
  ).trim();
  const subjectError = textProblem('subject', subject, MAX_SUBJECT_CHARS);
  if (subjectError) return { ok: false, error: new ValidationError(subjectError, { field: 'subject' }) };
  if (!isScope(c.scope))
    return {
      ok: false,
      error: new ValidationError(`scope must be one of ${MEMORY_SCOPES.join(', ')}`, { field: 'scope' }),
    };
  if (!isSensitivity(c.sensitivity))
    return {
      ok: false,
      error: new ValidationError(`sensitivity must be one of ${MEMORY_SENSITIVITIES.join(', ')}`, {
        field: 'sensitivity',
      }),
    };
  const policyError = scopeOrSensitivityRefusal(c.scope, c.sensitivity, c.agentId, policy);
  if (policyError) return { ok: false, error: policyError };
  const never = unrememberable(`${subject}\n${statement}`);
  if (never)
    return { ok: false, error: new ValidationError(never.message, { field: 'statement', reason: never.code }) };
  return { ok: true, subject, statement, scope: c.scope, sensitivity: c.sensitivity };
}

function scopeOrSensitivityRefusal(
  scope: MemoryScope,
  sensitivity: MemorySensitivity,
  agentId: string | null,
  policy: MemoryWritePolicy,
): ValidationError | AuthorizationError | null {
  if (scope === 'agent' && !agentId)
    return new ValidationError('an agent-scoped memory needs an agent', { field: 'scope' });
  if (scope === 'tenant' && !policy.allowTenantScope)
    return new AuthorizationError('only an admin or owner may store tenant-wide memories', { field: 'scope' });
  return sensitivityRefusal(sensitivity, policy);
}

function sensitivityRefusal(sensitivity: MemorySensitivity, policy: MemoryWritePolicy): AuthorizationError | null {
  if (sensitivity === 'sensitive' && !policy.allowSensitive)
    return new AuthorizationError(
      'sensitive memories are stored only under an explicit policy (memory.sensitive: allow in the policy file)',
      { field: 'sensitivity', reason: 'sensitive_not_allowed' },
    );
  return null;
}

/** The confidence a candidate enters with: as proposed (or its source's default), capped for untrusted content. */
function confidenceOf(c: MemoryCandidate): number {
  const proposed = typeof c.confidence === 'number' && Number.isFinite(c.confidence) ? c.confidence : null;
  const base = proposed ?? DEFAULT_CONFIDENCE[c.trust];
  return roundConfidence(c.trust === 'external' ? Math.min(base, EXTERNAL_CONFIDENCE_CEILING) : base);
}

function decideRecord(cmd: RecordMemory, state: MemoryState): Decision {
  const v = validated(cmd.candidate, cmd.policy);
  if (!v.ok) return refuse(v.error);
  const c = cmd.candidate;
  // A retried tool call finds its own write and records nothing twice.
  if (c.invocationId && [...state.memories.values()].some((m) => m.lastInvocationId === c.invocationId))
    return accept();
  if (c.trust !== 'user' && injectionIn(v.subject, v.statement).length > 0)
    return refuse(
      new ValidationError('an instruction-shaped statement from untrusted content is never stored', {
        field: 'statement',
        reason: 'injection',
      }),
    );
  const sKey = subjectKey(v.subject);
  const agentId = v.scope === 'agent' ? c.agentId : null;
  const peers = [...state.memories.values()].filter(
    (m) =>
      isLive(m) &&
      m.ownerPrincipalId === cmd.ownerPrincipalId &&
      m.scope === v.scope &&
      m.agentId === agentId &&
      m.subjectKey === sKey,
  );
  const confidence = confidenceOf(c);
  const same = peers.find((m) => m.statementKey === statementKey(v.statement));
  if (same) return accept(reinforce(cmd, same, confidence));
  const sources = sourceEventData(c.sourceEvents);
  const base: Recorded = {
    memoryId: cmd.memoryId,
    ownerPrincipalId: cmd.ownerPrincipalId,
    scope: v.scope,
    agentId,
    subject: v.subject,
    statement: v.statement,
    sourceEventIds: sources.map((s) => s.id),
    sourceEvents: sources,
    sourceSessionId: c.sourceSessionId,
    sourceRunId: c.sourceRunId,
    invocationId: c.invocationId,
    confidence,
    sensitivity: v.sensitivity,
    trust: c.trust,
    attribution: c.trust === 'user' ? null : c.attribution,
    validFrom: cmd.nowIso,
    expiresAt: typeof c.expiresAt === 'string' ? c.expiresAt : null,
    status: c.trust === 'external' ? 'tentative' : 'active',
    conflictsWith: [],
    question: null,
  };
  return accept(...withConflicts(cmd, base, peers));
}

/** The same statement again: confidence up (never from less trusted content), sources added. */
function reinforce(cmd: RecordMemory, m: MemoryView, confidence: number): NewEvent {
  const c = cmd.candidate;
  const trusted = TRUST_RANK[c.trust] >= TRUST_RANK[m.trust];
  const sources = sourceEventData(c.sourceEvents);
  const data: EventPayloads['memory.updated'] = {
    memoryId: m.id,
    change: 'reinforced',
    addedSourceEventIds: sources.map((s) => s.id),
    addedSourceEvents: sources,
    invocationId: c.invocationId,
  };
  if (trusted) data.confidence = roundConfidence(Math.max(m.confidence, confidence) + 0.05);
  if (TRUST_RANK[c.trust] > TRUST_RANK[m.trust]) {
    data.trust = c.trust;
    if (m.status === 'tentative') data.status = 'active';
  }
  return event('memory.updated', data, cmd.actor);
}

/**
 * A new statement about a subject that has live, different statements: conflicts are represented,
 * never overwritten. The user's own words supersede; untrusted content only records a tentative
 * memory beside them; an inferred one supersedes a clearly weaker rival, marks both `conflicting`
 * (with a question for the user) at close confidence, and is tentative when clearly weaker.
 */
function withConflicts(cmd: RecordMemory, base: Recorded, peers: readonly MemoryView[]): NewEvent[] {
  const actor = cmd.actor;
  if (peers.length === 0) return [event('memory.recorded', base, actor)];
  const rivals = peers.map((m) => m.id);
  if (base.trust === 'user' || base.trust === 'inferred') {
    const strongest = Math.max(...peers.map((m) => (TRUST_RANK[m.trust] > TRUST_RANK[base.trust] ? 2 : m.confidence)));
    const supersedes = base.trust === 'user' || base.confidence > strongest + CONFLICT_MARGIN;
    if (supersedes)
      return [
        event('memory.recorded', base, actor),
        ...peers.map((m) => event('memory.superseded', { memoryId: m.id, supersededBy: base.memoryId }, actor)),
      ];
    if (Math.abs(base.confidence - strongest) <= CONFLICT_MARGIN) {
      const question = questionFor(base, peers);
      return [
        event('memory.recorded', { ...base, status: 'conflicting', conflictsWith: rivals, question }, actor),
        ...peers.map((m) =>
          event(
            'memory.updated',
            {
              memoryId: m.id,
              change: 'conflicting',
              status: 'conflicting',
              conflictsWith: [...new Set([...m.conflictsWith, base.memoryId])],
              question,
            },
            actor,
          ),
        ),
      ];
    }
  }
  return [event('memory.recorded', { ...base, status: 'tentative', conflictsWith: rivals }, actor)];
}

function questionFor(base: Recorded, peers: readonly MemoryView[]): string {
  const quoted = [...peers.map((m) => m.statement ?? ''), base.statement ?? ''].map((s) => `"${s}"`);
  return `Which is right about ${base.subject ?? 'this'}: ${quoted.join(' or ')}?`;
}

function owned(state: MemoryState, memoryId: string, by: string): MemoryView | NotFoundError {
  const m = state.memories.get(memoryId);
  // Another principal's memory is not found, not forbidden: its existence is not disclosed.
  if (!m || m.status === 'deleted' || m.ownerPrincipalId !== by)
    return new NotFoundError(`memory ${memoryId} does not exist`, { memoryId });
  return m;
}

function decideEdit(cmd: EditMemory, state: MemoryState): Decision {
  const m = owned(state, cmd.memoryId, cmd.byPrincipalId);
  if (m instanceof NotFoundError) return refuse(m);
  const edit = editedFields(cmd, m);
  if (edit instanceof ValidationError || edit instanceof AuthorizationError) return refuse(edit);
  const events: NewEvent[] = [event('memory.updated', edit, cmd.actor)];
  // Confirming (or rewording) one side of a conflict settles it: the live rivals are superseded.
  if (m.status === 'conflicting' || m.status === 'tentative')
    for (const rival of m.conflictsWith) {
      const r = state.memories.get(rival);
      if (r && isLive(r)) events.push(event('memory.superseded', { memoryId: rival, supersededBy: m.id }, cmd.actor));
    }
  return accept(...events);
}

/** The `memory.updated` payload of a user's edit, or why it is refused. */
function editedFields(
  cmd: EditMemory,
  m: MemoryView,
): EventPayloads['memory.updated'] | ValidationError | AuthorizationError {
  const ch = cmd.changes;
  const data: EventPayloads['memory.updated'] = { memoryId: m.id, change: 'edited', trust: 'user', status: 'active' };
  if (ch.statement !== undefined) {
    const problem = textProblem('statement', ch.statement, MAX_STATEMENT_CHARS);
    if (problem) return new ValidationError(problem, { field: 'statement' });
    data.statement = (ch.statement as string).trim();
  }
  if (ch.subject !== undefined) {
    const problem = textProblem('subject', ch.subject, MAX_SUBJECT_CHARS);
    if (problem) return new ValidationError(problem, { field: 'subject' });
    data.subject = (ch.subject as string).trim();
  }
  const never = unrememberable(`${data.subject ?? ''}\n${data.statement ?? ''}`);
  if (never) return new ValidationError(never.message, { field: 'statement', reason: never.code });
  if (ch.sensitivity !== undefined) {
    if (!isSensitivity(ch.sensitivity))
      return new ValidationError(`sensitivity must be one of ${MEMORY_SENSITIVITIES.join(', ')}`, {
        field: 'sensitivity',
      });
    const refusal = sensitivityRefusal(ch.sensitivity, cmd.policy);
    if (refusal) return refusal;
    data.sensitivity = ch.sensitivity;
  }
  return withNumbers(data, ch, m);
}

function withNumbers(
  data: EventPayloads['memory.updated'],
  ch: MemoryChanges,
  m: MemoryView,
): EventPayloads['memory.updated'] | ValidationError {
  if (ch.confidence !== undefined) {
    if (typeof ch.confidence !== 'number' || !(ch.confidence >= 0 && ch.confidence <= 1))
      return new ValidationError('confidence must be a number from 0 to 1', { field: 'confidence' });
    data.confidence = roundConfidence(ch.confidence);
  } else if (m.confidence < DEFAULT_CONFIDENCE.user) data.confidence = DEFAULT_CONFIDENCE.user;
  if (ch.expiresAt !== undefined) {
    if (ch.expiresAt !== null && (typeof ch.expiresAt !== 'string' || Number.isNaN(Date.parse(ch.expiresAt))))
      return new ValidationError('expires_at must be an ISO-8601 time or null', { field: 'expires_at' });
    data.expiresAt = ch.expiresAt === null ? null : new Date(ch.expiresAt).toISOString();
  }
  if (ch.status !== undefined && ch.status !== 'active')
    return new ValidationError('status can only be set to active (to confirm a memory); delete it to forget it', {
      field: 'status',
    });
  return data;
}

function decide(cmd: MemoryCommand, state: MemoryState): Decision {
  switch (cmd.kind) {
    case 'RecordMemory':
      return decideRecord(cmd, state);
    case 'EditMemory':
      return decideEdit(cmd, state);
    case 'DeleteMemory': {
      const m = owned(state, cmd.memoryId, cmd.byPrincipalId);
      if (m instanceof NotFoundError) return refuse(m);
      return accept(event('memory.deleted', { memoryId: m.id }, cmd.actor));
    }
    case 'ExpireMemory': {
      const m = state.memories.get(cmd.memoryId);
      if (!m || !isLive(m)) return accept();
      return accept(event('memory.expired', { memoryId: m.id }, cmd.actor));
    }
    case 'RecordRetrieval': {
      const r = cmd.retrieval;
      const trace = { ...r, items: r.items.map((i) => ({ ...i })), blocked: [...r.blocked] };
      return accept(event('memory.retrieved', trace, { runId: cmd.runId, ...cmd.actor }));
    }
  }
}

function viewOfRecorded(d: Recorded): MemoryView {
  return {
    id: d.memoryId,
    ownerPrincipalId: d.ownerPrincipalId,
    scope: d.scope,
    agentId: d.agentId,
    subjectKey: d.subject === null ? null : subjectKey(d.subject),
    statementKey: d.statement === null ? null : statementKey(d.statement),
    statement: d.statement,
    status: d.status,
    confidence: d.confidence,
    trust: d.trust,
    conflictsWith: d.conflictsWith,
    lastInvocationId: d.invocationId,
  };
}

function evolveUpdated(m: MemoryView, d: EventPayloads['memory.updated']): MemoryView {
  return {
    ...m,
    ...(d.subject !== undefined ? { subjectKey: d.subject === null ? null : subjectKey(d.subject) } : {}),
    ...(d.statement !== undefined
      ? { statement: d.statement, statementKey: d.statement === null ? null : statementKey(d.statement) }
      : {}),
    ...(d.status !== undefined ? { status: d.status } : {}),
    ...(d.confidence !== undefined ? { confidence: d.confidence } : {}),
    ...(d.trust !== undefined ? { trust: d.trust } : {}),
    ...(d.conflictsWith !== undefined ? { conflictsWith: d.conflictsWith } : {}),
    ...(d.invocationId !== undefined ? { lastInvocationId: d.invocationId } : {}),
  };
}

function evolve(state: MemoryState, e: DecidedEvent): MemoryState {
  const set = (m: MemoryView): MemoryState => ({ memories: new Map(state.memories).set(m.id, m) });
  const status = (id: string, s: MemoryStatus): MemoryState => {
    const m = state.memories.get(id);
    return m ? set({ ...m, status: s }) : state;
  };
  switch (e.type) {
    case 'memory.recorded':
      return set(viewOfRecorded(e.data));
    case 'memory.updated': {
      const m = state.memories.get(e.data.memoryId);
      return m ? set(evolveUpdated(m, e.data)) : state;
    }
    case 'memory.superseded':
      return status(e.data.memoryId, 'superseded');
    case 'memory.deleted': {
      const m = state.memories.get(e.data.memoryId);
      return m ? set({ ...m, status: 'deleted', subjectKey: null, statementKey: null, statement: null }) : state;
    }
    case 'memory.expired':
      return status(e.data.memoryId, 'expired');
    default:
      return state;
  }
}

/**
 * Long-term memory records (issue 30, ADR 0035): the write policy, deduplication and conflict
 * handling of one owner's memory stream, decided from the memories the command concerns.
 */
export const memoryDecider: Decider<MemoryCommand, MemoryState> = {
  initialState: () => ({ memories: new Map() }),
  evolve,
  decide,
};
