import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadMemoryCases } from '../../../src/cli/eval/memory/memory-cases';
import { formatMemorySummary, runMemorySuite } from '../../../src/cli/eval/memory/memory-suite';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';

/**
 * The memory eval suite (evals/memory/, issue 30 item 7) in CI: every case through real runs of the
 * demo model and the fake fixtures on the embedded PostgreSQL. Prints recall@1/@3 and the
 * policy-failure count (bench/RESULTS.md keeps them).
 */
let tdb: TestDb;
let t: TestPlatform;
const root = path.resolve(__dirname, '../../..');

beforeAll(async () => {
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { pollIntervalMs: 50 });
}, 60_000);

afterAll(async () => {
  await t?.close();
  await tdb?.drop();
});

it('passes every memory case, with recall@3 of 1 and no policy failure', async () => {
  const cases = loadMemoryCases(path.join(root, 'evals/memory'), path.join(root, 'config/model-fixtures'));
  expect(cases.length).toBeGreaterThanOrEqual(30);
  const { results, summary } = await runMemorySuite(t.platform, cases);
  process.stderr.write(`${formatMemorySummary(summary)}\n`);
  expect(results.filter((r) => r.status === 'failed').map((r) => [r.name, r.failures])).toEqual([]);
  expect(summary.recallAt3).toBe(1);
  expect(summary.policyFailures).toBe(0);
  expect(summary.probes).toBeGreaterThanOrEqual(15);
}, 600_000);

it('fails a case whose right memory is not retrieved, and counts a retrieved forbidden text as a policy failure', async () => {
  // The suite's checks bite: two cases written to fail.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memory-eval-'));
  fs.writeFileSync(
    path.join(dir, '01_wrong_memory.yaml'),
    [
      'name: wrong_memory',
      'category: recall',
      'description: asks for a memory nobody stored',
      'steps:',
      '  - say: "remember that my dog is called Rex"',
      '  - session: 2',
      '    say: "what do you remember about dog?"',
      '    recall: "my cat is called Tom"',
    ].join('\n'),
  );
  fs.writeFileSync(
    path.join(dir, '02_own_memory_as_leak.yaml'),
    [
      'name: own_memory_as_leak',
      'category: isolation',
      'description: the owner recalls its own memory, declared as a leak',
      'steps:',
      '  - say: "remember that my team is called Blue Falcon"',
      '  - session: 2',
      '    say: "what do you remember about team?"',
      '    never: ["Blue Falcon"]',
    ].join('\n'),
  );
  const cases = loadMemoryCases(dir, path.join(root, 'config/model-fixtures'));
  const { results, summary } = await runMemorySuite(t.platform, cases);
  fs.rmSync(dir, { recursive: true, force: true });
  expect(results.map((r) => r.status)).toEqual(['failed', 'failed']);
  expect(results[0].probes).toEqual([{ expected: 'my cat is called Tom', rank: null }]);
  expect(results[0].failures[0]).toContain('not in the top 3 retrieved');
  expect(results[1].policyFailures).toBeGreaterThanOrEqual(1);
  expect(summary).toMatchObject({ passed: 0, failed: 2, recallAt1: 0, recallAt3: 0 });
}, 120_000);
