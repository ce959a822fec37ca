import { REPLACEMENT_CHARACTER } from '../../../src/domain/events/storable-text';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from './api-harness';

// Issue 36 / ADR 0041: text PostgreSQL cannot store and JSON too deep or too wide never reach a 500.
let tdb: TestDb;
let h: ApiHarness;
let sessionId: string;

beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(tdb.url, {}, { worker: true });
  sessionId = (await call(h.base, 'POST', '/v1/sessions', { body: {} })).body.id;
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
});

const json = { 'content-type': 'application/json' };

async function expectRefused(
  send: () => ReturnType<typeof call>,
  field: string,
): Promise<{ message: string; details: Record<string, unknown> }> {
  const events = await h.eventCount();
  const r = await send();
  expect(r.status).toBe(400);
  expect(r.body.error.code).toBe('validation_error');
  expect(r.body.error.details.field).toBe(field);
  expect(r.body.error.request_id).toEqual(expect.any(String));
  expect(JSON.stringify(r.body)).not.toMatch(/\bat .*\.(js|ts):\d+/);
  expect(await h.eventCount()).toBe(events);
  return r.body.error;
}

describe('unstorable text in API input is a 400 naming the field', () => {
  it('a NUL in a message text names content[0].text', async () => {
    const e = await expectRefused(
      () =>
        call(h.base, 'POST', `/v1/sessions/${sessionId}/messages`, {
          body: { content: [{ type: 'text', text: 'a\u0000b' }] },
        }),
      'content[0].text',
    );
    expect(e.message).toContain('NUL');
  });

  it('a lone surrogate (escaped in the JSON) is refused the same way', async () => {
    const e = await expectRefused(
      () =>
        call(h.base, 'POST', `/v1/sessions/${sessionId}/messages`, {
          raw: '{"content":[{"type":"text","text":"ok"},{"type":"text","text":"x\\udc00"}]}',
          headers: json,
        }),
      'content[1].text',
    );
    expect(e.message).toContain('surrogate');
  });

  it('a well-formed surrogate pair (an emoji) is accepted', async () => {
    const r = await call(h.base, 'POST', '/v1/sessions', { body: { title: 'party \ud83c\udf89' } });
    expect(r.status).toBe(201);
    const got = await call(h.base, 'GET', `/v1/sessions/${r.body.id}`);
    expect(got.body.title).toBe('party 🎉');
  });

  it.each([
    ['a session title', '/v1/sessions', { title: 'x\u0000' }, 'title'],
    ['a metadata value', '/v1/sessions', { metadata: { a: ['ok', 'b\u0000'] } }, 'metadata.a[1]'],
    ['a metadata key', '/v1/sessions', { metadata: { 'k\u0000': 1 } }, 'metadata.k\u0000'],
  ])('%s', async (_label, path, body, field) => {
    await expectRefused(() => call(h.base, 'POST', path, { body }), field);
  });

  it('a cancel reason and an approval reason', async () => {
    const run = '00000000-0000-4000-8000-000000000000';
    await expectRefused(() => call(h.base, 'POST', `/v1/runs/${run}/cancel`, { body: { reason: '\u0000' } }), 'reason');
    await expectRefused(
      () => call(h.base, 'POST', `/v1/approvals/${run}/resolve`, { body: { decision: 'deny', reason: 'no\u0000' } }),
      'reason',
    );
  });

  it('a NUL in a query string and in a name path parameter', async () => {
    await expectRefused(() => call(h.base, 'GET', `/v1/sessions?cursor=a%00b`), 'cursor');
    const r = await call(h.base, 'GET', `/v1/mcp/servers/ev%00il`);
    expect(r.status).toBe(400);
    expect(r.body.error.details.field).toMatch(/^path\[\d+\]$/);
  });
});

describe('bounded JSON', () => {
  it('a body nested 5,000 deep is a 400 naming the depth limit, in under 50 ms, memory unchanged', async () => {
    const deep = `{"metadata": {"a": ${'['.repeat(5000)}${']'.repeat(5000)}}}`;
    await call(h.base, 'POST', '/v1/sessions', { raw: deep, headers: json }); // warm the path
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const times: number[] = [];
    for (let i = 0; i < 20; i++) {
      // Timed: the request alone (expectRefused's event counts are outside the measurement).
      let took = 0;
      const e = await expectRefused(async () => {
        const t0 = performance.now();
        const r = await call(h.base, 'POST', '/v1/sessions', { raw: deep, headers: json });
        took = performance.now() - t0;
        return r;
      }, '(body)');
      times.push(took);
      expect(e.details.max_depth).toBe(64);
      expect(e.message).toContain('64');
    }
    global.gc?.();
    const grownMb = (process.memoryUsage().heapUsed - heapBefore) / 1e6;
    times.sort((a, b) => a - b);
    // The median round trip (client included), and the heap of the process serving the API.
    expect(times[10]).toBeLessThan(50);
    expect(grownMb).toBeLessThan(16);
  });

  it('64 levels are accepted; 65 are refused', async () => {
    const nest = (n: number) => `{"metadata": ${'{"a":'.repeat(n - 1)}1${'}'.repeat(n - 1)}}`;
    expect((await call(h.base, 'POST', '/v1/sessions', { raw: nest(64), headers: json })).status).toBe(201);
    await expectRefused(() => call(h.base, 'POST', '/v1/sessions', { raw: nest(65), headers: json }), '(body)');
  });

  it('brackets inside strings do not count', async () => {
    const r = await call(h.base, 'POST', '/v1/sessions', { body: { title: '['.repeat(400) + '"\\' } });
    expect(r.status).toBe(201);
  });

  it('more than 10,000 elements is a 400 naming the element limit', async () => {
    const wide = `{"metadata": {"a": [${Array(10_001).fill('0').join(',')}]}}`;
    const e = await expectRefused(() => call(h.base, 'POST', '/v1/sessions', { raw: wide, headers: json }), '(body)');
    expect(e.details.max_elements).toBe(10_000);
  });
});

describe('unstorable text from a model', () => {
  it('a fake model answering with a NUL and a lone surrogate: the run completes, each stored as U+FFFD', async () => {
    const { runId, sessionId: sid } = await h.t.submit('go', { modelPolicy: 'fake:nul_in_text' });
    expect(await h.t.waitForTerminal(runId)).toBe('completed');
    const msgs = await call(h.base, 'GET', `/v1/sessions/${sid}/messages`);
    const answer = msgs.body.items.at(-1);
    expect(JSON.stringify(answer)).toContain(`a${REPLACEMENT_CHARACTER}b and ${REPLACEMENT_CHARACTER} end`);
    const stored = await h.t.events(runId);
    expect(JSON.stringify(stored)).not.toContain('\\u0000');
  });
});
