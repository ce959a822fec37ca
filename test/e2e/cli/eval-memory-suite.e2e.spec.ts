import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { agentCli } from '../../support/cli';
import { ensureBuilt } from '../../support/processes';
import { createTestDb, type TestDb } from '../../support/test-db';

/**
 * `agent eval run --suite memory` (issue 30 item 7) in a real `agent` process: selected memory cases
 * run, the summary prints recall@1/@3 and the policy-failure count, `--json` gives the figures, and
 * an unknown suite is a usage error (exit 2) before anything runs.
 */
let tdb: TestDb;
let dataDir: string;
const env = () => ({ DATABASE_URL: tdb.url, AGENT_DATA_DIR: dataDir });

beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-eval-memory-'));
}, 240_000);
afterAll(async () => {
  await tdb?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

it('runs selected memory cases and prints recall@1/@3 and the policy failures', async () => {
  const r = await agentCli(['eval', 'run', '--suite', 'memory', '--case', '1', 'isolation_peer_recall'], env());
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/✓ 01_recall_time_zone/);
  expect(r.stdout).toMatch(/✓ 17_isolation_peer_recall/);
  expect(r.stdout).toContain('memory suite: 2 passed, 0 failed');
  expect(r.stdout).toContain('recall@1 1.000 · recall@3 1.000 (1 probes) · policy failures 0');
});

it('gives the figures as JSON', async () => {
  const r = await agentCli(['eval', 'run', '--suite', 'memory', '--case', 'credential_pin_refused', '--json'], env());
  expect(r.code).toBe(0);
  const doc = JSON.parse(r.stdout) as { summary: Record<string, unknown>; results: { name: string }[] };
  expect(doc.results.map((x) => x.name)).toEqual(['32_credential_pin_refused']);
  expect(doc.summary).toEqual({ passed: 1, failed: 0, probes: 0, recallAt1: null, recallAt3: null, policyFailures: 0 });
});

it('refuses an unknown suite with exit 2', async () => {
  const r = await agentCli(['eval', 'run', '--suite', 'nope'], env());
  expect(r.code).toBe(2);
  expect(r.stderr).toContain('unknown suite "nope" (cases, delegation or memory)');
});
