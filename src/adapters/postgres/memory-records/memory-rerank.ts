import type { Embeddings } from '../../../ports/embeddings';
import type { Logger } from '../../../ports/logger';
import type { RecalledMemory } from '../../../ports/memory-records';
import type { Queryable } from '../database';

/** Weight of the embedding similarity in a re-ranked score; the rest is the SQL score (normalised). */
export const RERANK_COSINE_WEIGHT = 0.6;
/** Candidates the SQL recall hands the re-ranker per item asked for (and at most). */
export const RERANK_POOL_FACTOR = 4;
export const RERANK_POOL_MAX = 50;
/** Vectors kept per process (memory id and revision → vector), so a recall embeds mostly its query. */
const CACHE_MAX = 10_000;

/** Cosine similarity of two vectors of one dimension (0 when either is zero). */
export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

const textOf = (m: RecalledMemory): string => `${m.record.subject ?? ''}: ${m.record.statement ?? ''}`;
const literal = (v: readonly number[]): string => `[${v.join(',')}]`;

/**
 * The embedding re-ranker of memory recall (ADR 0043): embeds the query and the SQL recall's
 * candidates through the `Embeddings` port and orders them by cosine similarity blended with the SQL
 * score. The similarity is computed by pgvector (`<=>`) when the extension is installed in the
 * database, otherwise in process over the candidate set — the same figure either way, and the set
 * is small (at most RERANK_POOL_MAX). If the endpoint fails, recall keeps the SQL ranking and one
 * warning says so (again only after it has recovered).
 */
export class MemoryReranker {
  private readonly cache = new Map<string, number[]>();
  private degraded = false;
  private vector: Promise<boolean> | null = null;

  constructor(
    private readonly embeddings: Embeddings,
    private readonly log?: Logger,
  ) {}

  /** The candidates re-ordered (`method` names how), or null: keep the SQL ranking. */
  async rerank(
    q: Queryable,
    query: string,
    candidates: readonly RecalledMemory[],
  ): Promise<{ items: RecalledMemory[]; engine: 'pgvector' | 'cosine' } | null> {
    if (candidates.length === 0) return null;
    let vectors: number[][];
    try {
      vectors = await this.vectorsFor(query, candidates);
    } catch (e) {
      if (!this.degraded)
        this.log?.warn('memory re-ranking is off: the embeddings endpoint failed; recall uses the SQL ranking', {
          error: e instanceof Error ? e.message : String(e),
        });
      this.degraded = true;
      return null;
    }
    if (this.degraded) this.log?.info('memory re-ranking is back: the embeddings endpoint answers', {});
    this.degraded = false;
    const [qv, ...cv] = vectors;
    const pg = await this.hasVector(q);
    const sims = pg ? await pgCosines(q, qv, cv) : cv.map((v) => cosine(qv, v));
    const top = Math.max(...candidates.map((c) => c.score), 1e-9);
    const items = candidates
      .map((c, i) => ({
        record: c.record,
        score:
          Math.round(
            (RERANK_COSINE_WEIGHT * Math.max(sims[i], 0) + (1 - RERANK_COSINE_WEIGHT) * (c.score / top)) * 1e4,
          ) / 1e4,
      }))
      .sort((a, b) => b.score - a.score || a.record.id.localeCompare(b.record.id));
    return { items, engine: pg ? 'pgvector' : 'cosine' };
  }

  private async vectorsFor(query: string, candidates: readonly RecalledMemory[]): Promise<number[][]> {
    const keys = candidates.map((c) => `${c.record.id}:${c.record.revision}`);
    const missing = candidates.filter((_, i) => !this.cache.has(keys[i]));
    const fresh = await this.embeddings.embed([query, ...missing.map(textOf)]);
    const dim = fresh[0].length;
    missing.forEach((c, i) => this.remember(`${c.record.id}:${c.record.revision}`, fresh[i + 1]));
    const vectors = keys.map((k) => this.cache.get(k) as number[]);
    // A model change on the endpoint changes the dimension: cached vectors of the old one are dropped.
    if (vectors.some((v) => v.length !== dim)) {
      this.cache.clear();
      return this.vectorsFor(query, candidates);
    }
    return [fresh[0], ...vectors];
  }

  private remember(key: string, v: number[]): void {
    if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(key, v);
  }

  /** Whether pgvector is installed in this database (the migration creates it where it is available). */
  private hasVector(q: Queryable): Promise<boolean> {
    this.vector ??= q
      .query(`SELECT 1 FROM pg_extension WHERE extname = 'vector'`)
      .then((r) => {
        this.log?.info('memory re-ranking computes similarity', {
          engine: r.rows.length > 0 ? 'pgvector' : 'in-process cosine (pgvector is not installed)',
        });
        return r.rows.length > 0;
      })
      .catch(() => false);
    return this.vector;
  }
}

/** Cosine similarities by pgvector: 1 - cosine distance, per candidate, in order. */
async function pgCosines(q: Queryable, qv: readonly number[], cv: readonly number[][]): Promise<number[]> {
  const rows = (
    await q.query<{ i: string; sim: number }>(
      `SELECT t.i, coalesce(1 - ($1::text::vector <=> t.v::vector), 0)::float8 AS sim
         FROM unnest($2::text[]) WITH ORDINALITY AS t(v, i) ORDER BY t.i`,
      [literal(qv), cv.map(literal)],
    )
  ).rows;
  // A zero vector has no direction: pgvector answers NaN, the in-process cosine 0.
  return rows.map((r) => (Number.isFinite(Number(r.sim)) ? Number(r.sim) : 0));
}
