import type { StoredEvent } from '../../../src/domain/events/payloads';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { createTestDb, type TestDb } from '../../support/test-db';
import { expectRunEventRanges } from '../../support/run-event-ranges';
import { makeConfigDir } from '../mcp/mcp-support';
import { call, readSse, startApi, type ApiHarness } from '../api/api-harness';

/**
 * Consensus mode (issue 32 item 5, ADR 0047) through the real worker, API and PostgreSQL: the
 * engines and the synthesizer are child runs; a permanently failing engine (the fake provider's
 * `permanent_failure` fixture) is re-sampled and the run still answers.
 */

const agent = (id: string, extra: string) => `
id: ${id}
version: 1
name: ${id}
instructions: Answer briefly.
model_policy: demo
enabled_tools: [math.calculate]
policy_profile: default
limits: { max_steps: 10, max_model_calls: 20, max_tool_calls: 20, deadline_seconds: 120 }
${extra}
`;

const AGENTS = {
  'flaky.yaml': agent('flaky', 'consensus: { engines: [demo, "fake:permanent_failure"] }'),
  'broken.yaml': agent(
    'broken',
    'consensus: { engines: ["fake:permanent_failure", "fake:permanent_failure"], max_resamples: 0 }',
  ),
  'stuck.yaml': agent('stuck', 'consensus: { engines: ["fake:hanging_model", "fake:hanging_model"] }'),
  'always.yaml': agent('always', 'mode: consensus\nconsensus: { prefix: "ask all:", quorum: 1 }'),
};

let tdb: TestDb;
let h: ApiHarness;
let config: { dir: string; remove(): void };

beforeAll(async () => {
  tdb = await createTestDb();
  config = makeConfigDir('version: 1\nservers: []\n', AGENTS);
  h = await startApi(
    tdb.url,
    { configDir: config.dir, delegationSweepMs: 500, leaseSeconds: 3 },
    { worker: true, workerOptions: { concurrency: 6 } },
  );
});
afterAll(async () => {
  await h?.close();
  await tdb?.drop();
  config?.remove();
});

const events = (runId: string) => h.t.platform.store.listRunEvents(runId, LOCAL_PRINCIPAL);
const children = (runId: string) => h.t.platform.childRunStore.childrenOf(runId, null);

function ofType<T extends StoredEvent['type']>(es: readonly StoredEvent[], type: T): StoredEvent<T>[] {
  return es.filter((e) => e.type === type) as unknown as StoredEvent<T>[];
}

async function ask(agentId: string | null, text: string): Promise<string> {
  const session = await call(h.base, 'POST', '/v1/sessions', { body: agentId ? { agent_id: agentId } : {} });
  expect(session.status).toBe(201);
  const sent = await call(h.base, 'POST', `/v1/sessions/${session.body.id}/messages`, {
    body: { content: [{ type: 'text', text }] },
  });
  expect(sent.status).toBe(202);
  return sent.body.run_id;
}

describe('consensus mode (issue 32, ADR 0047)', () => {
  it('answers "consensus: <question>" over two demo engines, the synthesis quoting both, with progress over SSE', async () => {
    const runId = await ask(null, 'consensus: what is 17 times 23');
    const frames = await readSse(`${h.base}/v1/runs/${runId}/events`, {
      until: (fs) => fs.some((f) => f.event === 'run.completed' || f.event === 'run.failed'),
      timeoutMs: 30_000,
    });
    const types = frames.map((f) => f.event);
    expect(types.filter((t) => t === 'consensus.proposal_received')).toHaveLength(2);
    expect(types).toContain('consensus.synthesized');
    expect(types.at(-1)).toBe('run.completed');
    const view = await call(h.base, 'GET', `/v1/runs/${runId}`);
    expect(view.body.status).toBe('completed');
    expect(view.body.final_text).toBe(
      'Consensus of 2 proposal(s) on "what is 17 times 23": engine 1 (demo) said "Engine 1 proposes: the answer is the value of 17 * 23."; ' +
        'engine 2 (demo) said "Engine 2 proposes: the answer is the value of 17 * 23.".',
    );
    expect(view.body.consensus.proposals.map((p: { engine: string }) => p.engine)).toEqual(['demo', 'demo']);
    expect(view.body.consensus.synthesis.text).toBe(view.body.final_text);
    // Three children (two engines, one synthesizer), no tools offered, their usage summed on the parent.
    const kids = await children(runId);
    expect(kids).toHaveLength(3);
    const calls = kids.reduce((n, k) => n + k.usage.modelCalls, 0);
    expect(view.body.model_call_count).toBe(0);
    expect(view.body.children).toHaveLength(3);
    const run = await h.t.platform.runs.get(runId, null);
    expect(run!.usage.modelCalls).toBe(calls);
    for (const k of kids) expect(ofType(await events(k.runId), 'tool.call.proposed')).toHaveLength(0);
  });

  it('re-samples an engine that fails permanently with a varied framing, still answers, and shows the proposals used', async () => {
    const runId = await ask('flaky', 'consensus: what is 2 plus 2');
    expect(await h.t.waitForTerminal(runId, 30_000)).toBe('completed');
    const es = await events(runId);
    const rounds = ofType(es, 'consensus.round_started').map((e) => e.data);
    expect(rounds.map((r) => [r.role, r.samples.map((s) => `${s.engine}#${s.attempt}`)])).toEqual([
      ['engine', ['demo#1', 'fake:permanent_failure#1']],
      ['engine', ['fake:permanent_failure#2']],
      ['synthesizer', ['demo#1']],
    ]);
    const failed = ofType(es, 'consensus.proposal_failed').map((e) => e.data);
    expect(failed.map((f) => [f.engine, f.attempt, f.status])).toEqual([
      ['fake:permanent_failure', 1, 'failed'],
      ['fake:permanent_failure', 2, 'failed'],
    ]);
    // The re-sample's message is framed differently from the first sample's.
    const [first, second] = failed.map((f) => f.runId);
    const firstText = ofType(await events(first), 'user.message.created')[0].data.content;
    const secondText = ofType(await events(second), 'user.message.created')[0].data.content;
    expect(JSON.stringify(firstText)).not.toEqual(JSON.stringify(secondText));
    expect(JSON.stringify(secondText)).toContain('sample 2');
    const view = await call(h.base, 'GET', `/v1/runs/${runId}`);
    const proposals = view.body.consensus.proposals as { run_id: string; engine: string; text: string }[];
    expect(proposals.map((p) => p.engine)).toEqual(['demo']);
    expect(view.body.consensus.synthesis.proposals).toEqual([proposals[0].run_id]);
    expect(view.body.final_text).toContain('Engine 1 proposes: the answer is the value of 2 + 2.');
    expect(view.body.final_text).toContain('no proposal from engine 2 (fake:permanent_failure)');
    expect(view.body.consensus.failures).toHaveLength(2);
    // Exactly one answer in the parent's session, attributed to the agent.
    expect(ofType(es, 'assistant.message.completed')).toHaveLength(1);
  });

  it('fails with a message naming every engine when none answers', async () => {
    const runId = await ask('broken', 'consensus: anything');
    expect(await h.t.waitForTerminal(runId, 30_000)).toBe('failed');
    const view = await call(h.base, 'GET', `/v1/runs/${runId}`);
    expect(view.body.failure.error_code).toBe('consensus_failed');
    expect(view.body.failure.message).toMatch(/no engine answered/);
    expect(view.body.failure.message).toContain('engine 1 (fake:permanent_failure)');
    expect(view.body.failure.message).toContain('engine 2 (fake:permanent_failure)');
    expect(ofType(await events(runId), 'consensus.round_started')).toHaveLength(1);
  });

  it('cancels both engines when the consensus run is cancelled, and records no proposal', async () => {
    const runId = await ask('stuck', 'consensus: will this ever end?');
    const waiting = async () => (await h.t.platform.runs.get(runId, null))?.status === 'waiting_for_children';
    for (let i = 0; i < 400 && !(await waiting()); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await waiting()).toBe(true);
    const cancel = await call(h.base, 'POST', `/v1/runs/${runId}/cancel`, { body: { reason: 'enough' } });
    expect(cancel.status).toBe(200);
    const ended = async () =>
      (await children(runId)).every((c) => ['cancelled', 'failed', 'completed'].includes(c.status));
    for (let i = 0; i < 400 && !(await ended()); i++) await new Promise((r) => setTimeout(r, 50));
    expect((await children(runId)).map((c) => c.status)).toEqual(['cancelled', 'cancelled']);
    await new Promise((r) => setTimeout(r, 700));
    const es = await events(runId);
    expect(es.at(-1)!.type).toBe('run.cancelled');
    expect(es.filter((e) => e.type.startsWith('consensus.')).map((e) => e.type)).toEqual(['consensus.round_started']);
  });

  it('answers every message of an agent in consensus mode by consensus, and ordinary turns stay ordinary', async () => {
    const runId = await ask('always', 'what is 6 times 7');
    expect(await h.t.waitForTerminal(runId, 30_000)).toBe('completed');
    const view = await call(h.base, 'GET', `/v1/runs/${runId}`);
    expect(view.body.final_text).toMatch(/^Consensus of 2 proposal\(s\) on "what is 6 times 7"/);
    const plain = await ask(null, 'what is 6 times 7');
    expect(await h.t.waitForTerminal(plain, 30_000)).toBe('completed');
    expect((await call(h.base, 'GET', `/v1/runs/${plain}`)).body).toEqual(
      expect.objectContaining({ final_text: 'The result is 42.', children: [], consensus: null }),
    );
  });

  it('reads every run’s events from its session range exactly as the log holds them (ADR 0054)', async () => {
    expect(await expectRunEventRanges(h.t.platform.db, h.t.platform.store)).toBeGreaterThan(0);
  });
});
