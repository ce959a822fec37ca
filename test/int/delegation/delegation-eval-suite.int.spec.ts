import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadCases } from '../../../src/cli/eval/load-cases';
import { runSuite } from '../../../src/cli/eval/runner';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';

/**
 * The delegation eval suite (evals/delegation/, issue 32 item 8) as `agent eval run --suite
 * delegation` runs it: delegation on, each case in its own session with the CLI's in-process worker
 * (which claims the case's run and its children), on the embedded PostgreSQL.
 */
let tdb: TestDb;
let t: TestPlatform;
const root = path.resolve(__dirname, '../../..');
const fixturesDir = path.join(root, 'config/model-fixtures');

beforeAll(async () => {
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { delegationEnabled: true, leaseSeconds: 3, pollIntervalMs: 100 });
}, 60_000);

afterAll(async () => {
  await t?.close();
  await tdb?.drop();
});

it('passes every delegation and consensus case', async () => {
  const cases = loadCases(path.join(root, 'evals/delegation'), { fixturesDir });
  expect(cases.map((c) => c.name)).toEqual([
    'one_child',
    'two_children_join',
    'child_failure_is_tool_error',
    'parent_cancel_cancels_children',
    'budget_carved_and_summed',
    'depth_refusal',
    'consensus_failing_engine_resampled',
    'two_arm_single_agent_fails',
    'two_arm_delegating_completes',
  ]);
  const results = await runSuite(t.platform, cases);
  expect(results.filter((r) => r.status !== 'passed').map((r) => [r.name, r.failures])).toEqual([]);
}, 300_000);

it("fails a case whose children's statuses, usage or event counts are not what it states", async () => {
  // The children assertions bite: the first case, with expectations it does not meet.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'delegation-eval-'));
  const one = fs.readFileSync(path.join(root, 'evals/delegation/01_one_child.yaml'), 'utf8');
  fs.writeFileSync(
    path.join(dir, '01_one_child.yaml'),
    one.replace('statuses: [completed]', 'statuses: [failed]\n    event_counts: { tool.call.started: 3 }'),
  );
  const [result] = await runSuite(t.platform, loadCases(dir, { fixturesDir }));
  expect(result.status).toBe('failed');
  expect(result.failures).toEqual([
    'children: statuses are [completed], expected [failed]',
    'children: tool.call.started occurs 0 time(s) over the children, expected 3',
  ]);
}, 120_000);
