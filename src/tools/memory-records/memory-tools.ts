import { textOf } from '../../domain/conversation/items';
import { eventsOrThrow, WORKER } from '../../domain/deciders/decider';
import { memoryDecider } from '../../domain/deciders/memory';
import { AgentError } from '../../domain/errors';
import type { NewEvent, StoredEvent } from '../../domain/events/payloads';
import { MEMORY_SENSITIVITIES, statementKey, subjectKey } from '../../domain/memory/memory-record';
import { provenanceOf, type SeenText, type SourceEvent, type UntrustedText } from '../../domain/memory/provenance';
import { isBlocked, memoryLine } from '../../domain/memory/render';
import type { Principal } from '../../domain/principal';
import type { ToolResult, ToolSpec } from '../../domain/tools/tool-spec';
import type { EventStore } from '../../ports/event-store';
import type { MemoryRecord, MemoryStore } from '../../ports/memory-records';
import type { ToolExecutionContext } from '../../ports/tool';
import type { ExtendedTool } from '../tool-extensions';

export const MEMORY_REMEMBER = 'memory.remember';
export const MEMORY_RECALL = 'memory.recall';
export const MEMORY_FORGET = 'memory.forget';

export interface MemoryToolDeps {
  readonly memories: MemoryStore;
  /** The run's events: where a statement came from is decided from them, not from the model. */
  readonly events: Pick<EventStore, 'listRunEvents'>;
}

/** The run's principal as tools see it: its own memories only, no roles (tenant-wide writes are not the model's). */
function principalOf(ctx: ToolExecutionContext): Principal {
  return { tenantId: ctx.tenantId, principalId: ctx.principalId, roles: new Set(), scopes: new Set() };
}

const refusal = (e: unknown): ToolResult => {
  if (e instanceof AgentError)
    return { ok: false, errorCode: `memory_${e.code}`, message: e.message, retryable: false };
  throw e;
};

const base = {
  outputSchema: null,
  risk: 'low' as const,
  timeoutSeconds: 15,
  maximumOutputBytes: 16 * 1024,
  allowParallel: false,
};

const REMEMBER_SPEC: ToolSpec = {
  ...base,
  name: MEMORY_REMEMBER,
  version: '1',
  description:
    'Remember a durable fact about the user for later sessions (their name, time zone, team, preferences). Give the statement in the user\u2019s words; subject is what it is about (e.g. "time zone"). Never for passwords, tokens or anything said only for now.',
  inputSchema: {
    type: 'object',
    properties: {
      statement: { type: 'string', minLength: 1, maxLength: 2000 },
      subject: { type: 'string', minLength: 1, maxLength: 200 },
      scope: { type: 'string', enum: ['principal', 'agent'] },
      sensitivity: { type: 'string', enum: [...MEMORY_SENSITIVITIES] },
      expires_at: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}', maxLength: 40 },
    },
    required: ['statement'],
    additionalProperties: false,
  },
  // Writes only the platform's own store, decided by the memory policy; a retry finds its own write.
  sideEffect: 'workspace_write',
  idempotency: 'idempotent',
  requiredScopes: ['memory.write'],
};

const sourceOf = (e: StoredEvent): SourceEvent => ({ id: e.id, sessionId: e.sessionId, sequence: e.sequence });

/** What the run has seen: its user message(s) and the untrusted tool results before this call. */
export function seenBy(events: readonly StoredEvent[]): { user: SeenText[]; untrusted: UntrustedText[] } {
  const tools = new Map<string, string>();
  const user: SeenText[] = [];
  const untrusted: UntrustedText[] = [];
  for (const e of events) {
    if (e.type === 'user.message.created') user.push({ event: sourceOf(e), text: textOf(e.data.content) });
    if (e.type === 'tool.call.proposed') tools.set(e.data.invocationId, e.data.toolName);
    if (e.type === 'tool.call.completed' && e.data.trust === 'external_untrusted')
      untrusted.push({
        event: sourceOf(e),
        tool: tools.get(e.data.invocationId) ?? 'unknown',
        text: JSON.stringify(e.data.result),
      });
  }
  return { user, untrusted };
}

/** The statement keys `memory.remember` calls of the run wrote (end-of-run formation skips them). */
export function rememberedBy(events: readonly StoredEvent[]): Set<string> {
  const calls = new Set<string>();
  const keys = new Set<string>();
  for (const e of events) {
    if (e.type === 'tool.call.proposed' && e.data.toolName === MEMORY_REMEMBER) calls.add(e.data.invocationId);
    if (e.type === 'tool.call.completed' && calls.has(e.data.invocationId)) {
      const statement = e.data.result.statement;
      if (typeof statement === 'string') keys.add(statementKey(statement));
    }
  }
  return keys;
}

/** An `expires_at` argument as ISO-8601 (an unparseable one is left to the decider to refuse). */
function expiryOf(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? v : new Date(t).toISOString();
}

export function createRememberTool(d: MemoryToolDeps): ExtendedTool {
  return {
    spec: REMEMBER_SPEC,
    async execute(args, ctx) {
      const principal = principalOf(ctx);
      const statement = String(args.statement);
      const seen = seenBy(await d.events.listRunEvents(ctx.runId, principal));
      const p = provenanceOf(statement, seen.user, seen.untrusted);
      try {
        const r = await d.memories.remember({
          principal,
          actor: WORKER,
          candidate: {
            statement,
            subject: typeof args.subject === 'string' ? args.subject : null,
            scope: typeof args.scope === 'string' ? args.scope : 'principal',
            agentId: ctx.agent?.id ?? null,
            sensitivity: typeof args.sensitivity === 'string' ? args.sensitivity : 'personal',
            trust: p.trust,
            attribution: p.attribution,
            sourceEvents: p.sourceEvents,
            sourceSessionId: ctx.sessionId,
            sourceRunId: ctx.runId,
            invocationId: ctx.invocationId,
            expiresAt: expiryOf(args.expires_at),
          },
        });
        return {
          ok: true,
          output: {
            memory_id: r.memory.id,
            outcome: r.outcome,
            subject: r.memory.subject,
            statement: r.memory.statement,
            status: r.memory.status,
            confidence: r.memory.confidence,
            trust: r.memory.trust,
            superseded: [...r.superseded],
            conflicts: [...r.conflicts],
            question: r.memory.question,
          },
        };
      } catch (e) {
        return refusal(e);
      }
    },
  };
}

const RECALL_SPEC: ToolSpec = {
  ...base,
  name: MEMORY_RECALL,
  version: '1',
  description:
    'Look up what you remember about the user (hybrid full-text and similarity search over long-term memory). Returns memories with ids, status and scores; tentative ones came from untrusted content.',
  inputSchema: {
    type: 'object',
    properties: {
      query: { type: 'string', minLength: 1, maxLength: 500 },
      limit: { type: 'integer', minimum: 1, maximum: 20 },
    },
    required: ['query'],
    additionalProperties: false,
  },
  sideEffect: 'read',
  idempotency: 'read_only',
  requiredScopes: ['memory.read'],
};

function recalledItem(m: MemoryRecord, score: number) {
  const blocked = isBlocked(m);
  return {
    memory_id: m.id,
    // A poisoned memory is withheld, never shown (the injection scan at load).
    subject: blocked ? null : m.subject,
    statement: blocked ? `[BLOCKED memory ${m.id}]` : m.statement,
    line: memoryLine(m, 2100),
    status: m.status,
    confidence: m.confidence,
    trust: m.trust,
    attribution: m.attribution,
    blocked,
    score,
  };
}

export function createRecallTool(d: MemoryToolDeps): ExtendedTool {
  return {
    spec: RECALL_SPEC,
    async execute(args, ctx) {
      const query = String(args.query);
      const r = await d.memories.recall({
        tenantId: ctx.tenantId,
        principalId: ctx.principalId,
        agentId: ctx.agent?.id ?? null,
        query,
        limit: typeof args.limit === 'number' ? args.limit : 5,
        includeTentative: true,
        requireMatch: true,
        nowIso: ctx.clock.nowIso(),
      });
      return {
        ok: true,
        output: { query, method: r.method, items: r.items.map((i) => recalledItem(i.record, i.score)) },
      };
    },
    // The retrieval trace rides with the call's completion (`memory.retrieved`).
    tracesFor: (output, invocationId, runId) => recallTrace(output, invocationId, runId),
  };
}

/** `memory.retrieved` for a `memory.recall` result: the query, the ids and scores, the blocked ids. */
export function recallTrace(output: Record<string, unknown>, invocationId: string, runId: string | null): NewEvent[] {
  const items = (output.items as { memory_id: string; score: number; blocked: boolean }[] | undefined) ?? [];
  const decided = memoryDecider.decide(
    {
      kind: 'RecordRetrieval',
      actor: WORKER,
      runId,
      retrieval: {
        // One trace per call: its id is the invocation's.
        retrievalId: invocationId,
        purpose: 'recall',
        query: typeof output.query === 'string' ? output.query.slice(0, 2000) : null,
        invocationId,
        method: typeof output.method === 'string' ? output.method : 'fts',
        items: items.map((i, k) => ({ memoryId: i.memory_id, score: i.score, rank: k + 1 })),
        blocked: items.filter((i) => i.blocked).map((i) => i.memory_id),
        rendered: null,
      },
    },
    memoryDecider.initialState(),
  );
  return [...eventsOrThrow(decided)];
}

const FORGET_SPEC: ToolSpec = {
  ...base,
  name: MEMORY_FORGET,
  version: '1',
  description:
    'Forget (delete) what you remember about a subject, or one memory by id. Needs the user\u2019s approval; the statement is then erased everywhere.',
  inputSchema: {
    type: 'object',
    properties: {
      subject: { type: 'string', minLength: 1, maxLength: 200 },
      memory_id: {
        type: 'string',
        pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
      },
    },
    additionalProperties: false,
  },
  // Destructive: the policy asks a human first (config/policies/default.yaml).
  sideEffect: 'workspace_write',
  risk: 'medium',
  idempotency: 'idempotent',
  requiredScopes: ['memory.write'],
};

export function createForgetTool(d: MemoryToolDeps): ExtendedTool {
  return {
    spec: FORGET_SPEC,
    async execute(args, ctx) {
      const principal = principalOf(ctx);
      if (typeof args.subject !== 'string' && typeof args.memory_id !== 'string')
        return { ok: false, errorCode: 'invalid_arguments', message: 'give subject or memory_id', retryable: false };
      const targets = await forgettable(d.memories, principal, args);
      try {
        for (const m of targets) await d.memories.forget(principal, m.id, WORKER);
      } catch (e) {
        return refusal(e);
      }
      return {
        ok: true,
        output: {
          subject: typeof args.subject === 'string' ? args.subject : null,
          forgotten: targets.length,
          memory_ids: targets.map((m) => m.id),
        },
      };
    },
  };
}

/** The principal's own live memories the call names: one by id, or every one about the subject. */
async function forgettable(memories: MemoryStore, principal: Principal, args: Record<string, unknown>) {
  if (typeof args.memory_id === 'string') {
    const m = await memories.get(principal, args.memory_id);
    return m && m.record.ownerPrincipalId === principal.principalId ? [m.record] : [];
  }
  const key = subjectKey(String(args.subject));
  const page = await memories.list(principal, { subject: key, limit: 200, cursor: null });
  return page.items.filter(
    (m) => m.ownerPrincipalId === principal.principalId && m.subject !== null && subjectKey(m.subject) === key,
  );
}

/** The memory tools (issue 30): an agent uses the ones its `enabled_tools` name. */
export function createMemoryTools(d: MemoryToolDeps): ExtendedTool[] {
  return [createRememberTool(d), createRecallTool(d), createForgetTool(d)];
}
