import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { createTestDb, type TestDb } from '../support/test-db';
import { isSubsequence } from '../support/platform';
import { ensureBuilt, ROOT } from '../support/processes';

const PLAN_26 = [
  'run.queued',
  'run.started',
  'model.request.started',
  'model.response.completed',
  'tool.call.proposed',
  'tool.call.authorized',
  'tool.call.started',
  'tool.call.completed',
  'run.checkpointed',
  'model.request.started',
  'model.response.completed',
  'assistant.message.completed',
  'run.completed',
];

let tdb: TestDb;
beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
});
afterAll(() => tdb.drop());

function agent(args: string[]) {
  return spawnSync(process.execPath, [path.join(ROOT, 'bin', 'agent.js'), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: tdb.url },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('the agent CLI', () => {
  it('runs "What is 17 multiplied by 23?" printing the plan §26 events in order and 391', () => {
    const r = agent(['run', 'What is 17 multiplied by 23?']);
    expect(r.status).toBe(0);
    const types = r.stdout
      .split('\n')
      .map((l) => l.trim().split(/\s+/)[0] ?? '')
      .filter((w) => /^[a-z_]+\.[a-z_.]+$/.test(w));
    expect(isSubsequence(PLAN_26, types)).toBe(true);
    expect(r.stdout).toContain('The result is 391.');
  });

  it('streams NDJSON with --json and shows a run with run get', () => {
    const r = agent(['run', '--json', 'what is 2^10']);
    expect(r.status).toBe(0);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; runId: string });
    expect(events.at(-1)?.type).toBe('run.completed');
    const got = agent(['run', 'get', events[0].runId]);
    expect(got.status).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ status: 'completed', finalText: 'The result is 1024.' });
  });

  it('verifies the read models, names a corrupted row, and repairs it with projections rebuild', async () => {
    expect(agent(['run', 'What is 6 times 7?']).status).toBe(0);
    const ok = agent(['projections', 'rebuild', '--verify']);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/runs\s+\d+ rows\s+ok/);
    const { Client } = await import('pg');
    const c = new Client({ connectionString: tdb.url });
    await c.connect();
    const victim = (await c.query<{ id: string }>(`SELECT id FROM runs WHERE status = 'completed' LIMIT 1`)).rows[0].id;
    await c.query(`UPDATE runs SET status = 'queued' WHERE id = $1`, [victim]);
    const bad = agent(['projections', 'rebuild', '--verify']);
    expect(bad.status).toBe(1);
    expect(bad.stdout).toContain(victim);
    expect(bad.stdout).toContain('status');
    expect(agent(['projections', 'rebuild']).status).toBe(0);
    expect((await c.query(`SELECT status FROM runs WHERE id = $1`, [victim])).rows[0]).toEqual({ status: 'completed' });
    await c.end();
    const again = agent(['projections', 'rebuild', '--verify']);
    if (again.status !== 0)
      throw new Error(`verify after repair exited ${again.status}:\n${again.stdout}\n${again.stderr}`);
    // Five CLI processes one after another, each loading the whole CLI: on a loaded 2-CPU machine
    // that alone has taken more than the default 60 s.
  }, 180_000);

  it('refuses an empty message with exit code 2 and an unknown run with exit code 3', () => {
    const empty = agent(['run', '   ']);
    expect(empty.status).toBe(2);
    expect(empty.stderr).toContain('must not be empty');
    const missing = agent(['run', 'get', '00000000-0000-0000-0000-000000000000']);
    expect(missing.status).toBe(3);
  });
});
