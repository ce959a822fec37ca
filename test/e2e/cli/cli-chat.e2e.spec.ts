import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { startInTerminal, type TerminalSession } from '../../support/cli';
import { ensureBuilt, startAgent, type Proc } from '../../support/processes';
import { createTestDb, type TestDb } from '../../support/test-db';

/**
 * `agent chat` in a real terminal (a pseudo-terminal from util-linux `script`), typed at as a user
 * types, against a running platform (an `agent worker` on the same database races chat's own
 * in-process worker for each run, as with `npm start`).
 */

let tdb: TestDb;
let db: Client;
let dataDir: string;
const procs: Proc[] = [];
const terminals: TerminalSession[] = [];

const env = () => ({ DATABASE_URL: tdb.url, AGENT_DATA_DIR: dataDir, AGENT_POLL_INTERVAL_MS: '300' });
const chat = (...args: string[]) => {
  const t = startInTerminal(['chat', ...args], env());
  terminals.push(t);
  return t;
};

beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
  db = new Client({ connectionString: tdb.url });
  await db.connect();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-chat-'));
  procs.push(startAgent(['worker'], { ...env(), WORKER_METRICS_PORT: '0' }));
}, 240_000);
afterAll(async () => {
  for (const t of terminals) t.child.kill('SIGKILL');
  for (const p of procs) p.child.kill('SIGKILL');
  await db?.end();
  await tdb?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

describe('agent chat in a terminal', () => {
  it('sends messages, answers an approval with y and a question, and quits with /exit', async () => {
    const t = chat();
    // Typed before the first prompt appears: kept for it, not lost.
    t.type('What is 17 multiplied by 23?');
    const [, sessionId] = await t.waitForOutput(new RegExp(`session (${UUID}) — type a message, or /exit`));
    await t.waitForOutput(/agent> The result is 391\./);
    expect(t.stdout()).toMatch(/· math\.calculate \{"expression":"17 \* 23"\}\n\s+✓ math\.calculate/);

    await t.waitForOutput(/you> $/);
    t.type('send the minutes to the board');
    await t.waitForOutput(/approve send to the board: "the minutes"\? \[y\/N\] $/);
    t.type('y');
    await t.waitForOutput(/agent> Sent to the board\./);
    const writes = await db.query(`SELECT target, content FROM demo_external_writes WHERE session_id = $1`, [
      sessionId,
    ]);
    expect(writes.rows).toEqual([{ target: 'the board', content: 'the minutes' }]);

    t.type('ask me which city I live in');
    await t.waitForOutput(/agent asks: which city I live in\n\s+your answer> $/);
    t.type('Lyon');
    await t.waitForOutput(/agent> You answered: "Lyon"\./);

    t.type('/exit');
    expect(await t.exited).toBe(0);
    const runs = await db.query<{ status: string }>(
      `SELECT status FROM runs WHERE session_id = $1 ORDER BY created_at`,
      [sessionId],
    );
    expect(runs.rows.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
  }, 180_000);

  it('denies with n and a reason, resumes a session with --session, and quits on end of input', async () => {
    const t = chat();
    const [, sessionId] = await t.waitForOutput(new RegExp(`session (${UUID}) — type a message`));
    t.type('publish the draft');
    await t.waitForOutput(/approve send to public: "the draft"\? \[y\/N\] $/);
    t.type('n');
    await t.waitForOutput(/reason \(optional\): $/);
    t.type('it is not final');
    await t.waitForOutput(/⊘ demo\.external_write: /);
    await t.waitForOutput(/agent> .*\n.*you> $/s);
    t.type('/quit');
    expect(await t.exited).toBe(0);
    const denied = await db.query(
      `SELECT payload FROM events WHERE session_id = $1 AND event_type = 'approval.resolved'`,
      [sessionId],
    );
    expect(denied.rows[0].payload).toMatchObject({ decision: 'denied', reason: 'it is not final' });

    const again = chat('--session', sessionId);
    await again.waitForOutput(new RegExp(`session ${sessionId} — type a message`));
    again.type('What is 2 to the power of 8?');
    await again.waitForOutput(/agent> The result is 256\./);
    again.child.stdin?.write('\u0004'); // Ctrl-D on an empty line: the end of input
    expect(await again.exited).toBe(0);
    const runs = await db.query(`SELECT count(*)::int AS n FROM runs WHERE session_id = $1`, [sessionId]);
    expect(runs.rows[0]).toEqual({ n: 2 });
  }, 180_000);

  it('/queue runs a message after the one in flight; /interrupt stops the run for a new one (issue 33)', async () => {
    // Every model call of fake:slow_three_steps takes 1.5 s and it has two tool steps: the run is
    // still working (a step to go) when the next line is typed.
    const t = chat('--model-policy', 'fake:slow_three_steps');
    const [, sessionId] = await t.waitForOutput(new RegExp(`session (${UUID}) — type a message, or /exit`));
    t.type('first question');
    await t.waitForOutput(/· math\.calculate/);
    t.type('/queue second question');
    await t.waitForOutput(/⧗ queued \(1 ahead\)/);
    await t.waitForOutput(/agent> The result is 392\.[\s\S]*agent> The result is 392\./);
    const queued = await db.query<{ status: string; queued_behind: string | null }>(
      `SELECT status, queued_behind FROM runs WHERE session_id = $1 ORDER BY created_at`,
      [sessionId],
    );
    expect(queued.rows.map((r) => r.status)).toEqual(['completed', 'completed']);
    expect(queued.rows[1].queued_behind).not.toBeNull();

    await t.waitForOutput(/you> $/);
    t.type('third question');
    await t.waitForOutput(/you> third question\n[\s\S]*· math\.calculate \{"expression":"17 \* 23"\}/);
    t.type('/interrupt fourth question');
    await t.waitForOutput(/↯ interrupting the current run/);
    await t.waitForOutput(/run interrupted by a newer message\n[\s\S]*agent> The result is 392\./);
    t.type('/exit');
    expect(await t.exited).toBe(0);
    const runs = await db.query<{ status: string }>(
      `SELECT status FROM runs WHERE session_id = $1 ORDER BY created_at`,
      [sessionId],
    );
    expect(runs.rows.map((r) => r.status)).toEqual(['completed', 'completed', 'interrupted', 'completed']);
  }, 180_000);
});
