import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { startWorkerMetricsServer } from '../../../src/composition/telemetry';
import { silentLogger } from '../../../src/adapters/logging/pino-logger';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from '../api/api-harness';

/**
 * `GET /metrics` over real HTTP after real runs (plan §19): the API process also runs a worker here,
 * so its registry holds the run, model and tool metrics. Labels are provider, model, tool, status,
 * class, kind and reason — never an id.
 */
let tdb: TestDb;
let api: ApiHarness;

beforeAll(async () => {
  tdb = await createTestDb();
  api = await startApi(tdb.url, {}, { worker: true });
  const runs: string[] = [];
  for (const text of ['What is 17 multiplied by 23?', 'calculate (2+3)*4', 'what is 2^10', 'What is 1 divided by 0?']) {
    const session = await call(api.base, 'POST', '/v1/sessions', { body: {} });
    const sent = await call(api.base, 'POST', `/v1/sessions/${session.body.id}/messages`, {
      body: { content: [{ type: 'text', text }] },
    });
    runs.push(sent.body.run_id);
  }
  for (const id of runs) await api.t.waitForTerminal(id, 30_000);
  // A failed run (permanent model error) for agent_runs_failed_total and a failed model call.
  const failed = await api.t.submit('hi', { modelPolicy: 'fake:permanent_failure' });
  await api.t.waitForTerminal(failed.runId, 30_000);
});
afterAll(async () => {
  await api?.close();
  await tdb?.drop();
});

/** Parses the text exposition into `name{labels}` → value. */
async function scrape(base: string): Promise<{ text: string; contentType: string; samples: Map<string, number> }> {
  const r = await fetch(`${base}/metrics`);
  expect(r.status).toBe(200);
  const text = await r.text();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    samples.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return { text, contentType: r.headers.get('content-type') ?? '', samples };
}

const sum = (samples: Map<string, number>, prefix: string, filter = '') =>
  [...samples.entries()]
    .filter(([k]) => (k === prefix || k.startsWith(`${prefix}{`)) && k.includes(filter))
    .reduce((a, [, v]) => a + v, 0);

describe('GET /metrics', () => {
  it('serves the Prometheus text format with every plan §19 metric', async () => {
    const { text, contentType } = await scrape(api.base);
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const name of [
      'agent_runs_total',
      'agent_runs_completed_total',
      'agent_runs_failed_total',
      'agent_run_duration_seconds',
      'model_calls_total',
      'model_call_duration_seconds',
      'model_tokens_total',
      'tool_calls_total',
      'tool_failures_total',
      'tool_duration_seconds',
      'approval_requests_total',
      'run_recoveries_total',
      'budget_exceeded_total',
    ])
      expect(text).toMatch(new RegExp(`^# TYPE ${name} (counter|histogram)$`, 'm'));
  });

  it('counts the runs, model calls and tool calls that happened, with duration histogram buckets', async () => {
    const { samples } = await scrape(api.base);
    expect(sum(samples, 'agent_runs_total')).toBeGreaterThanOrEqual(5);
    expect(sum(samples, 'agent_runs_completed_total')).toBeGreaterThanOrEqual(4);
    expect(sum(samples, 'agent_runs_failed_total', 'reason="model_permanent_error"')).toBeGreaterThanOrEqual(1);
    expect(sum(samples, 'model_calls_total', 'provider="demo",model="demo",status="ok"')).toBeGreaterThanOrEqual(8);
    expect(sum(samples, 'model_calls_total', 'provider="fake",model="permanent_failure"')).toBeGreaterThanOrEqual(1);
    expect(sum(samples, 'model_tokens_total', 'class="output"')).toBeGreaterThan(0);
    expect(sum(samples, 'model_tokens_total', 'class="uncached_input"')).toBeGreaterThan(0);
    expect(sum(samples, 'tool_calls_total', 'tool="math.calculate",status="succeeded"')).toBeGreaterThanOrEqual(3);
    // 1 / 0 is refused by the calculator: a failed tool call.
    expect(sum(samples, 'tool_failures_total', 'tool="math.calculate"')).toBeGreaterThanOrEqual(1);
    const infBuckets: Record<string, string> = {
      model_call_duration_seconds: 'provider="demo",model="demo",status="ok"',
      tool_duration_seconds: 'tool="math.calculate",status="succeeded"',
      agent_run_duration_seconds: 'status="completed"',
    };
    for (const [h, labels] of Object.entries(infBuckets)) {
      expect(samples.get(`${h}_bucket{le="+Inf",${labels}}`)).toBeGreaterThan(0);
      expect(sum(samples, `${h}_bucket`, labels)).toBeGreaterThan(0);
      expect(sum(samples, `${h}_count`)).toBeGreaterThan(0);
      expect(sum(samples, `${h}_sum`)).toBeGreaterThan(0);
    }
  });

  it('never puts an id in a label', async () => {
    const { samples } = await scrape(api.base);
    const labels = [...samples.keys()].flatMap((k) => [...k.matchAll(/="([^"]*)"/g)].map((m) => m[1]));
    expect(labels.length).toBeGreaterThan(10);
    for (const v of labels) expect(v).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i);
  });

  it('follows the rules of /health: no authentication, even in token mode', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'metrics-auth-'));
    const tokensFile = path.join(dir, 'tokens.json');
    fs.writeFileSync(tokensFile, '[]');
    const secured = await startApi(tdb.url, { authMode: 'token', authTokensFile: tokensFile });
    try {
      expect((await fetch(`${secured.base}/v1/sessions`)).status).toBe(401);
      expect((await fetch(`${secured.base}/health/live`)).status).toBe(200);
      const r = await fetch(`${secured.base}/metrics`);
      expect(r.status).toBe(200);
      expect(await r.text()).toContain('# TYPE agent_runs_completed_total counter');
    } finally {
      await secured.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("serves the worker's own registry on its metrics port", async () => {
    const server = await startWorkerMetricsServer(api.t.platform.metrics, { host: '127.0.0.1', port: 0 }, silentLogger);
    expect(server).toBeNull(); // port 0 turns the server off
    const free = await new Promise<number>((resolve) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const on = await startWorkerMetricsServer(api.t.platform.metrics, { host: '127.0.0.1', port: free }, silentLogger);
    try {
      const { samples } = await scrape(`http://127.0.0.1:${on!.port}`);
      expect(sum(samples, 'agent_runs_completed_total')).toBeGreaterThanOrEqual(4);
      expect((await fetch(`http://127.0.0.1:${on!.port}/other`)).status).toBe(404);
      // A port in use is logged, not fatal.
      expect(
        await startWorkerMetricsServer(api.t.platform.metrics, { host: '127.0.0.1', port: free }, silentLogger),
      ).toBeNull();
    } finally {
      await on?.close();
    }
  });
});

describe('GET /v1/observability/summary (the dashboard metrics panel)', () => {
  it("summarises the caller's runs: by status, model latency, tokens by class, tool failures", async () => {
    const r = await call(api.base, 'GET', '/v1/observability/summary');
    expect(r.status).toBe(200);
    expect(r.body.runs_by_status.completed).toBeGreaterThanOrEqual(4);
    expect(r.body.runs_by_status.failed).toBeGreaterThanOrEqual(1);
    const demo = r.body.models.find((m: { provider: string }) => m.provider === 'demo');
    expect(demo).toMatchObject({ model: 'demo', failed: 0 });
    expect(demo.calls).toBeGreaterThanOrEqual(8);
    expect(demo.p95_latency_ms).toEqual(expect.any(Number));
    expect(r.body.tokens_by_class.output).toBeGreaterThan(0);
    expect(r.body.tools).toContainEqual(expect.objectContaining({ tool: 'math.calculate', failed: 1 }));
    const cfg = await call(api.base, 'GET', '/v1/observability');
    expect(cfg.body).toEqual({ trace_ui_url: null, tracing_enabled: false });
  });
});
