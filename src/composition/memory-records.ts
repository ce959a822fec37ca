import type { Database } from '../adapters/postgres/database';
import type { PgAppender } from '../adapters/postgres/event-store/pg-appender';
import { PgMemoryRecords } from '../adapters/postgres/memory-records/pg-memory-records';
import { MemoryReranker } from '../adapters/postgres/memory-records/memory-rerank';
import { OpenAiEmbeddings } from '../adapters/embeddings/openai-embeddings';
import type { MemorySettings } from '../config/memory-settings';
import type { PolicyEngine } from '../policy/policy-engine';
import type { Clock, IdFactory } from '../ports/clock';
import type { Logger } from '../ports/logger';
import type { MemoryStore } from '../ports/memory-records';
import type { EventStore } from '../ports/event-store';
import type { ToolRegistry } from '../tools/registry';
import { createMemoryTools } from '../tools/memory-records/memory-tools';

export interface MemoryWiring {
  readonly db: Database;
  readonly appender: PgAppender;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly log: Logger;
  readonly policy: PolicyEngine;
  /** The embeddings re-ranker's endpoint (MEMORY_EMBEDDINGS_URL), or null. */
  readonly embeddings: Pick<MemorySettings, 'embeddingsUrl' | 'embeddingsModel' | 'embeddingsApiKey'>;
  /** Drops this process's context folds of sessions an erasure rewrote. */
  readonly forgetSessions: (sessionId: string) => void;
}

/**
 * Long-term memory (issue 30, ADR 0035): the PostgreSQL store, its sensitive-memory policy read
 * from the policy file, and the erasure's hook into this process's context engine (a session whose
 * events a deletion rewrote is folded again from the log by its next build here).
 */
export function createMemoryStore(w: MemoryWiring): MemoryStore {
  return new PgMemoryRecords(w.db, w.appender, w.clock, w.ids, {
    allowSensitive: () => w.policy.document.memory.sensitive === 'allow',
    log: w.log,
    reranker: rerankerOf(w),
    onErased: (sessionIds) => {
      for (const id of sessionIds) w.forgetSessions(id);
    },
  });
}

/** The embedding re-ranker when MEMORY_EMBEDDINGS_URL is set (ADR 0043): its key is never logged. */
function rerankerOf(w: MemoryWiring): MemoryReranker | undefined {
  const e = w.embeddings;
  if (!e.embeddingsUrl) return undefined;
  w.log.info('memory recall is re-ranked by embeddings', {
    endpoint: `${e.embeddingsUrl.replace(/\/+$/, '')}/embeddings`,
    model: e.embeddingsModel,
    key: e.embeddingsApiKey ? 'set' : 'none',
  });
  const embeddings = new OpenAiEmbeddings({
    baseUrl: e.embeddingsUrl,
    model: e.embeddingsModel,
    apiKey: e.embeddingsApiKey,
  });
  return new MemoryReranker(embeddings, w.log);
}

/**
 * Registers `memory.remember`, `memory.recall` and `memory.forget` (an agent is offered the ones its
 * `enabled_tools` name) and checks the policy's rules for them, as the other tools were checked.
 */
export function registerMemoryTools(
  registry: ToolRegistry,
  policy: PolicyEngine,
  memories: MemoryStore,
  events: Pick<EventStore, 'listRunEvents'>,
): void {
  for (const tool of createMemoryTools({ memories, events })) registry.register(tool);
  policy.assertConsistentWith(registry.list().map((t) => t.spec));
}
