import { Client } from 'pg';
import { jsonbShape } from '../../src/adapters/postgres/jsonb-shape';
import { createTestDb, type TestDb } from '../support/test-db';

/**
 * `jsonbShape` against the real thing: every value, sent as `JSON.stringify` text into a jsonb
 * parameter and read back, serialises to exactly the same text (same members, same key order, same
 * numbers) as `jsonbShape` of it computed locally.
 */
let tdb: TestDb;
let c: Client;

beforeAll(async () => {
  tdb = await createTestDb({ migrated: false });
  c = new Client({ connectionString: tdb.url });
  await c.connect();
});

afterAll(async () => {
  await c?.end();
  await tdb?.drop();
});

async function viaJsonb(v: unknown): Promise<unknown> {
  const r = await c.query<{ v: unknown }>('SELECT $1::jsonb AS v', [JSON.stringify(v)]);
  return r.rows[0].v;
}

/** A small deterministic PRNG, so a failure names a reproducible case. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const KEY_PARTS = ['a', 'b', 'id', 'Z', 'ab', 'ba', 'text', 'é', 'ß', '日本', '😀', '10', '2', '_', 'k-1', 'aa', 'A'];

function randomValue(rand: () => number, depth: number): unknown {
  const pick = rand();
  if (depth <= 0 || pick < 0.35) {
    const leaf = Math.floor(rand() * 10);
    switch (leaf) {
      case 0:
        return null;
      case 1:
        return rand() < 0.5;
      case 2:
        return Math.floor(rand() * 1e6) - 5e5;
      case 3:
        return (rand() - 0.5) * 10 ** Math.floor(rand() * 40 - 20);
      case 4:
        return 0.1 + 0.2;
      case 5:
        return `s${Math.floor(rand() * 100)} "quoted" \\ / \n\t é 😀`;
      case 6:
        return '';
      case 7:
        return 1e21;
      case 8:
        return -0;
      default:
        return 'plain';
    }
  }
  if (pick < 0.55) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth - 1));
  const obj: Record<string, unknown> = {};
  const n = Math.floor(rand() * 7);
  for (let i = 0; i < n; i++) {
    const key =
      KEY_PARTS[Math.floor(rand() * KEY_PARTS.length)] +
      (rand() < 0.3 ? KEY_PARTS[Math.floor(rand() * KEY_PARTS.length)] : '');
    obj[key] = rand() < 0.08 ? undefined : randomValue(rand, depth - 1);
  }
  return obj;
}

describe('jsonbShape', () => {
  it('matches PostgreSQL jsonb for 500 random nested values', async () => {
    const rand = prng(20261202);
    for (let i = 0; i < 500; i++) {
      const v = { payload: randomValue(rand, 4), n: i };
      const local = JSON.stringify(jsonbShape(v));
      const server = JSON.stringify(await viaJsonb(v));
      if (local !== server) throw new Error(`case ${i}: ${JSON.stringify(v)}\n local  ${local}\n server ${server}`);
    }
  });

  it('orders keys by byte length first, then bytes, as jsonb stores them', async () => {
    const v = {
      text: 1,
      id: 2,
      b: 3,
      a: 4,
      é: 5,
      ab: 6,
      Z: 7,
      '😀': 8,
      nested: { zz: 1, y: 2, xxx: [{ bb: 1, a: 2 }] },
    };
    const shaped = jsonbShape(v) as Record<string, unknown>;
    expect(Object.keys(shaped)).toEqual(['Z', 'a', 'b', 'ab', 'id', 'é', 'text', '😀', 'nested']);
    expect(JSON.stringify(shaped)).toBe(JSON.stringify(await viaJsonb(v)));
  });

  it('drops undefined members and applies toJSON, as the text sent to the server does', async () => {
    const v = { when: new Date('2026-12-02T03:04:05.678Z'), gone: undefined, list: [undefined, 1], nan: Number.NaN };
    expect(jsonbShape(v)).toEqual({ nan: null, list: [null, 1], when: '2026-12-02T03:04:05.678Z' });
    expect(JSON.stringify(jsonbShape(v))).toBe(JSON.stringify(await viaJsonb(v)));
  });
});
