import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { addUsage, ZERO_USAGE, type RunUsage } from '../../../src/domain/run/usage';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from '../api/api-harness';

let tdb: TestDb;
let h: ApiHarness;

beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(tdb.url, { delegationEnabled: true, delegationSweepMs: 500 }, { worker: true });
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
});

const ask = (text: string) => ({ content: [{ type: 'text', text }] });

async function waitForStatus(runId: string, done: (s: string) => boolean, timeoutMs = 30_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await call(h.base, 'GET', `/v1/runs/${runId}`);
    if (done(r.body.status)) return r.body.status;
    if (Date.now() > end) throw new Error(`run ${runId} still ${r.body.status}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** The run's own usage: the model responses of its own log (its children's are in their sessions). */
function ownUsage(events: readonly StoredEvent[]): RunUsage {
  let u = ZERO_USAGE;
  for (const e of events) {
    if (e.type === 'model.request.started') u = { ...u, modelCalls: u.modelCalls + 1 };
    if (e.type === 'tool.call.proposed') u = { ...u, toolCalls: u.toolCalls + 1 };
    if (e.type === 'model.response.completed') u = addUsage(u, { ...ZERO_USAGE, ...e.data.usage, cost: e.data.cost });
  }
  return u;
}

const wire = (u: RunUsage) => ({
  model_calls: u.modelCalls,
  tool_calls: u.toolCalls,
  uncached_input_tokens: u.uncachedInputTokens,
  cached_input_tokens: u.cachedInputTokens,
  cache_write_tokens: u.cacheWriteTokens,
  output_tokens: u.outputTokens,
  reasoning_tokens: u.reasoningTokens,
  cost: u.cost,
});

describe('delegate.run through the API (issue 32, ADR 0037)', () => {
  it('"delegate: a; b" runs two child runs in their own sessions while the parent waits, then answers with both results and the summed usage', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: ask('delegate: what is 17 times 23; what time is it in Asia/Tokyo'),
    });
    expect(m.status).toBe(202);
    const runId = m.body.run_id;
    expect(await waitForStatus(runId, (x) => ['completed', 'failed', 'cancelled'].includes(x))).toBe('completed');

    const run = await call(h.base, 'GET', `/v1/runs/${runId}`);
    expect(run.body.final_text).toContain('391');
    expect(run.body.final_text).toContain('Asia/Tokyo');
    expect(run.body.children).toHaveLength(2);
    const childSessions: string[] = run.body.children.map((c: { session_id: string }) => c.session_id);
    expect(new Set([...childSessions, s.body.id]).size).toBe(3);
    for (const c of run.body.children) expect(c.status).toBe('completed');

    // The parent waited for its children, joined once and resumed once.
    const events = await h.t.platform.store.listRunEvents(runId, LOCAL_PRINCIPAL);
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === 'run.waiting_for_children')).toHaveLength(1);
    expect(types.filter((t) => t === 'run.children_joined')).toHaveLength(1);
    expect(types.filter((t) => t === 'run.resumed')).toHaveLength(1);
    expect(types.indexOf('run.waiting_for_children')).toBeLessThan(types.indexOf('run.children_joined'));
    expect(types.indexOf('run.children_joined')).toBe(types.indexOf('run.resumed') - 1);
    const result = events.find((e): e is StoredEvent<'tool.call.completed'> => e.type === 'tool.call.completed')!;
    expect(result.data.trust).toBe('external_untrusted');

    // Usage after the join = the parent's own + both children's.
    const children = await call(h.base, 'GET', `/v1/runs/${runId}/children`);
    expect(children.status).toBe(200);
    expect(children.body.items).toHaveLength(2);
    let total = ownUsage(events);
    for (const c of children.body.items) {
      const childEvents = await h.t.platform.store.listRunEvents(c.run_id, LOCAL_PRINCIPAL);
      const own = ownUsage(childEvents);
      expect(c.usage).toEqual(wire(own));
      expect(c.final_text).toEqual(expect.any(String));
      total = addUsage(total, own);
    }
    const { model_calls: _m, tool_calls: _t, cost, ...tokens } = wire(total);
    expect(run.body.usage).toEqual(tokens);
    expect(run.body.cost).toBe(cost);
    expect(total.modelCalls).toBe(2 + 2 + 2);
    const stored = await h.t.platform.runs.get(runId, null);
    expect(stored!.usage).toEqual(total);

    // Nothing of a child is written to the parent's session: its messages are the user's and the answer.
    const msgs = await call(h.base, 'GET', `/v1/sessions/${s.body.id}/messages`);
    expect(msgs.body.items.map((x: { role: string }) => x.role)).toEqual(['user', 'assistant']);
    const first = await call(h.base, 'GET', `/v1/sessions/${childSessions[0]}/messages`);
    expect(first.body.items.map((x: { role: string }) => x.role)).toEqual(['user', 'assistant']);
    expect(String(first.body.items[0].content[0].text)).toMatch(/^what is 17 times 23/);
  });
});
