#!/usr/bin/env node
/**
 * `npm test`: every test, in two phases. First the whole suite except the high-availability tests,
 * on Jest's parallel workers; then `test/e2e/ha/` alone, one file at a time. The HA tests run real
 * clusters (Patroni with etcd and HAProxy, PgBouncer, hosts in network namespaces) whose failure
 * detection runs on timers: starved of CPU by the parallel suite they time out instead of failing
 * over, so they get the machine to themselves. The last line is Jest's own summary form for both
 * phases together (`Tests: N failed, N skipped, N passed, N total`), which `.ci/run` reads.
 *
 * With arguments (`npm test -- test/int/foo`), it is plain `jest` with those arguments.
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const jest = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const HA = 'test/e2e/ha/';

function run(args) {
  return spawnSync(process.execPath, [jest, '-c', 'jest.config.js', ...args], { cwd: root, stdio: 'inherit' }).status;
}

const passThrough = process.argv.slice(2);
if (passThrough.length > 0) process.exit(run(passThrough) ?? 1);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-core-tests-'));
const phases = [
  { name: 'the suite (without test/e2e/ha)', args: ['--testPathIgnorePatterns', '/node_modules/', HA] },
  { name: 'the high-availability tests, one file at a time', args: ['--runInBand', HA] },
];
const totals = { failed: 0, pending: 0, passed: 0, total: 0 };
let status = 0;
for (const [i, phase] of phases.entries()) {
  const out = path.join(dir, `phase-${i}.json`);
  process.stderr.write(`\nnpm test: ${phase.name}\n`);
  const code = run([...phase.args, '--json', `--outputFile=${out}`]);
  if (code !== 0) status = code ?? 1;
  try {
    const r = JSON.parse(fs.readFileSync(out, 'utf8'));
    totals.failed += r.numFailedTests;
    totals.pending += r.numPendingTests + (r.numTodoTests ?? 0);
    totals.passed += r.numPassedTests;
    totals.total += r.numTotalTests;
    // A suite that failed to run (a syntax error, a failing beforeAll) has no failed test to count.
    if (r.numRuntimeErrorTestSuites > 0 && r.numFailedTests === 0) totals.failed += r.numRuntimeErrorTestSuites;
  } catch {
    totals.failed += 1; // the phase ended without a report
  }
}
fs.rmSync(dir, { recursive: true, force: true });
const parts = [];
if (totals.failed) parts.push(`${totals.failed} failed`);
if (totals.pending) parts.push(`${totals.pending} skipped`);
parts.push(`${totals.passed} passed`, `${totals.total} total`);
process.stderr.write(`\nnpm test, both phases:\nTests:       ${parts.join(', ')}\n`);
process.exit(status);
