import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { cosine } from '../../../src/adapters/postgres/memory-records/memory-rerank';
import type { Logger } from '../../../src/ports/logger';
import type { RecallResult } from '../../../src/ports/memory-records';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';

/**
 * The embeddings re-ranker (MEMORY_EMBEDDINGS_URL, ADR 0043) against a real local HTTP server that
 * stands in for the external provider: an OpenAI-compatible `POST /embeddings` answering hashed
 * bag-of-words vectors (with one synonym, so meaning can beat word overlap). Recall is re-ordered
 * by cosine similarity; the Bearer key reaches the server and never a log; a failing endpoint
 * degrades recall to the SQL ranking with one warning.
 */
const KEY = 'local-embeddings-test-key-0123';
const DIM = 256;
const SYNONYMS: Record<string, string> = { automobile: 'car', vehicle: 'car' };
let failing = false;
const seenAuth: string[] = [];
let calls = 0;

function vectorOf(text: string): number[] {
  const v = new Array<number>(DIM).fill(0);
  for (const raw of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const w = SYNONYMS[raw] ?? raw;
    let h = 2166136261;
    for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w.charCodeAt(i), 16777619) >>> 0;
    v[h % DIM] += 1;
  }
  return v;
}

const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    calls += 1;
    seenAuth.push(String(req.headers.authorization));
    if (failing || req.url !== '/v1/embeddings' || req.method !== 'POST') {
      res.writeHead(failing ? 503 : 404).end();
      return;
    }
    const { input } = JSON.parse(body) as { input: string[] };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ data: input.map((t, index) => ({ index, embedding: vectorOf(t) })), model: 'hashed' }));
  });
});

const logged: string[] = [];
const logger: Logger = {
  info: (m, f) => logged.push(`info ${m} ${JSON.stringify(f ?? {})}`),
  warn: (m, f) => logged.push(`warn ${m} ${JSON.stringify(f ?? {})}`),
  error: (m, f) => logged.push(`error ${m} ${JSON.stringify(f ?? {})}`),
  debug: () => undefined,
  child: () => logger,
};

let tdb: TestDb;
let t: TestPlatform;
const saved = { url: process.env.MEMORY_EMBEDDINGS_URL, key: process.env.MEMORY_EMBEDDINGS_API_KEY };

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.env.MEMORY_EMBEDDINGS_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  process.env.MEMORY_EMBEDDINGS_API_KEY = KEY;
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, {}, { logger, quiet: false });
  for (const statement of [
    'my car is a blue Volvo',
    'my bike is a red Trek',
    'my favourite colour is green',
    'my team is called Blue Falcon',
  ])
    await t.platform.memories.remember({
      principal: LOCAL_PRINCIPAL,
      actor: { actorType: 'user', actorId: LOCAL_PRINCIPAL.principalId },
      candidate: {
        statement,
        scope: 'principal',
        agentId: null,
        sensitivity: 'personal',
        trust: 'user',
        attribution: null,
        sourceEvents: [],
        sourceSessionId: null,
        sourceRunId: null,
        invocationId: null,
      },
    });
}, 60_000);

afterAll(async () => {
  await t?.close();
  await tdb?.drop();
  await new Promise((r) => server.close(r));
  for (const [k, v] of [
    ['MEMORY_EMBEDDINGS_URL', saved.url],
    ['MEMORY_EMBEDDINGS_API_KEY', saved.key],
  ] as const)
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
});

const recall = (query: string, limit = 4): Promise<RecallResult> =>
  t.platform.memories.recall({
    tenantId: LOCAL_PRINCIPAL.tenantId,
    principalId: LOCAL_PRINCIPAL.principalId,
    agentId: null,
    query,
    limit,
    includeTentative: false,
    requireMatch: false,
    nowIso: new Date().toISOString(),
  });

describe('the embeddings re-ranker', () => {
  it('orders the SQL candidates by cosine similarity to the query', async () => {
    const r = await recall('which automobile do I drive');
    expect(r.method).toMatch(/^fts(\+trgm)?\+rerank:(pgvector|cosine)$/);
    // No word of the query is in any memory; the synonym puts the car first.
    expect(r.items[0].record.statement).toBe('my car is a blue Volvo');
    const q = vectorOf('which automobile do I drive');
    const sims = r.items.map((i) => cosine(q, vectorOf(`${i.record.subject}: ${i.record.statement}`)));
    expect(sims[0]).toBeGreaterThan(0);
    expect(sims.slice(1).every((s) => s <= sims[0])).toBe(true);
  });

  it('sends the key as a Bearer token and never logs it', () => {
    expect(seenAuth.length).toBeGreaterThan(0);
    expect(new Set(seenAuth)).toEqual(new Set([`Bearer ${KEY}`]));
    expect(logged.some((l) => l.includes('memory recall is re-ranked by embeddings'))).toBe(true);
    expect(logged.filter((l) => l.includes(KEY))).toEqual([]);
  });

  it('embeds only what it has not seen: a repeated recall sends the query alone', async () => {
    const before = calls;
    await recall('which automobile do I drive');
    expect(calls).toBe(before + 1);
  });

  it('keeps at most the limit, from the wider pool the SQL recall proposed', async () => {
    const r = await recall('blue', 1);
    expect(r.items).toHaveLength(1);
  });

  it('degrades to the SQL ranking with one warning when the endpoint fails, and recovers', async () => {
    failing = true;
    const sqlOnly = await recall('which automobile do I drive');
    await recall('which automobile do I drive');
    expect(sqlOnly.method).toMatch(/^fts(\+trgm)?$/);
    expect(sqlOnly.items).toHaveLength(4);
    // Without the re-ranker the car is not first: the re-ranking above moved it.
    expect(sqlOnly.items[0].record.statement).not.toBe('my car is a blue Volvo');
    expect(logged.filter((l) => l.startsWith('warn memory re-ranking is off'))).toHaveLength(1);
    expect(logged.find((l) => l.startsWith('warn memory re-ranking is off'))).toContain('HTTP 503');
    failing = false;
    const back = await recall('which automobile do I drive');
    expect(back.method).toContain('+rerank');
    expect(logged.filter((l) => l.startsWith('info memory re-ranking is back'))).toHaveLength(1);
  });
});
