import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse } from 'yaml';
import { AtomicLineFile } from '../../src/composition/trajectory';
import { projectRoot } from '../../src/config/project-root';
import { loadCases } from '../../src/cli/eval/load-cases';
import { promoteTrajectory } from '../../src/cli/eval/promote';
import { runSuite } from '../../src/cli/eval/runner';
import { ConflictError, NotFoundError, ValidationError } from '../../src/domain/errors';
import type { Worker } from '../../src/runtime/worker';
import { createTestPlatform, type TestPlatform } from '../support/platform';
import { createTestDb, type TestDb } from '../support/test-db';

/** `agent eval promote`: an exported calculator trajectory becomes a case that `agent eval run` passes (issue 9 item 7). */
let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let work: string;
let configDir: string;
let casesDir: string;
let exportFile: string;
let runId: string;

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'trajectory-promote-'));
  configDir = path.join(work, 'config');
  fs.cpSync(path.join(projectRoot(), 'config'), configDir, { recursive: true });
  casesDir = path.join(work, 'cases');
  fs.mkdirSync(casesDir);
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { configDir, leaseSeconds: 3, pollIntervalMs: 200 });
  worker = t.platform.createWorker({ concurrency: 2, pollIntervalMs: 200, drainMs: 5000 });
  await worker.start();
  await t.platform.trajectories.consent.grant('local', 'local-user', 'test');
  ({ runId } = await t.submit('What is 17 multiplied by 23?'));
  expect(await t.waitForTerminal(runId)).toBe('completed');
  await worker.stop();
  exportFile = path.join(work, 'export.jsonl');
  const out = AtomicLineFile.open(exportFile);
  await t.platform.trajectories.exporter.export('local', { status: 'all', runId }, out.write);
  await out.commit();
});
afterAll(async () => {
  await t.close();
  await tdb.drop();
  fs.rmSync(work, { recursive: true, force: true });
});

describe('agent eval promote', () => {
  it('turns the calculator trajectory into a source: trajectory case that the eval runner passes', async () => {
    const fixturesDir = path.join(configDir, 'model-fixtures');
    const promoted = await promoteTrajectory({ file: exportFile, runId, casesDir, fixturesDir });
    const caseDoc = parse(fs.readFileSync(promoted.caseFile, 'utf8')) as Record<string, unknown>;
    expect(caseDoc).toMatchObject({
      source: 'trajectory',
      source_run_id: runId,
      input: { text: 'What is 17 multiplied by 23?' },
      expected: {
        terminal_status: 'completed',
        final_text_contains: ['The result is 391.'],
        tool_calls: [{ name: 'math.calculate', count: 1, arguments_subset: { expression: '17 * 23' } }],
      },
    });
    const fixture = parse(fs.readFileSync(promoted.fixtureFile, 'utf8')) as { turns: unknown[] };
    expect(fixture.turns).toEqual([
      { tool_calls: [expect.objectContaining({ name: 'math.calculate', arguments: { expression: '17 * 23' } })] },
      { text: 'The result is 391.' },
    ]);

    const cases = loadCases(casesDir, { fixturesDir, defaultAgentId: 'general' });
    expect(cases.map((c) => c.name)).toEqual([promoted.name]);
    const [result] = await runSuite(t.platform, cases);
    expect(result.failures).toEqual([]);
    expect(result.status).toBe('passed');
    // The replay ran on the fake provider with the promoted script, not the demo model.
    const run = await t.platform.runs.get(result.runId ?? '', null);
    expect(run?.modelPolicy).toBe(`fake:${promoted.name}`);

    await expect(promoteTrajectory({ file: exportFile, runId, casesDir, fixturesDir })).rejects.toBeInstanceOf(
      ConflictError,
    );
  });

  it('refuses a corrupt trajectory line with its number and reason, and writes nothing', async () => {
    const fixturesDir = path.join(configDir, 'model-fixtures');
    const good = fs.readFileSync(exportFile, 'utf8').trim();
    const truncated = path.join(work, 'truncated.jsonl');
    fs.writeFileSync(truncated, `${good}\n${good.slice(0, 40)}\n`);
    const before = [fs.readdirSync(casesDir), fs.readdirSync(fixturesDir)];
    await expect(
      promoteTrajectory({ file: truncated, runId: 'not-in-file', casesDir, fixturesDir, name: 'x_case' }),
    ).rejects.toThrow(/truncated\.jsonl line 2: not valid JSON/);
    const wrongShape = path.join(work, 'shape.jsonl');
    const doc = JSON.parse(good) as { messages: { role: string }[] };
    doc.messages[1].role = 'narrator';
    fs.writeFileSync(wrongShape, `\n${JSON.stringify(doc)}\n`);
    const e = await promoteTrajectory({ file: wrongShape, runId, casesDir, fixturesDir, name: 'y_case' }).catch(
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as Error).message).toMatch(/shape\.jsonl line 2: not a trajectory document: messages\.1\.role/);
    await expect(
      promoteTrajectory({ file: exportFile, runId: 'ffffffff-0000-4000-8000-000000000000', casesDir, fixturesDir }),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      promoteTrajectory({ file: path.join(work, 'missing.jsonl'), runId, casesDir, fixturesDir, name: 'z_case' }),
    ).rejects.toThrow(/cannot read .*missing\.jsonl: ENOENT/);
    expect([fs.readdirSync(casesDir), fs.readdirSync(fixturesDir)]).toEqual(before);
  });
});
