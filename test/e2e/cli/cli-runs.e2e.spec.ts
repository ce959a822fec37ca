import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { agentCli, freePort, startCli, type RunningCli } from '../../support/cli';
import { ensureBuilt, startAgent, waitFor, type Proc } from '../../support/processes';
import { createTestDb, type TestDb } from '../../support/test-db';

/**
 * The run, session and approval commands as a user types them: real `agent` processes
 * (bin/agent.js) against a running platform — an `agent api` and an `agent worker` process on one
 * database. `agent run --no-local-worker` leaves the run to that worker, as when `npm start` runs.
 */

let tdb: TestDb;
let db: Client;
let dataDir: string;
let base: string;
let worker: Proc;
const procs: Proc[] = [];
const clis: RunningCli[] = [];

const env = () => ({
  DATABASE_URL: tdb.url,
  AGENT_DATA_DIR: dataDir,
  AGENT_LEASE_SECONDS: '3',
  AGENT_POLL_INTERVAL_MS: '300',
});
const agent = (...args: string[]) => agentCli(args, env());
const background = (...args: string[]) => {
  const c = startCli(args, env());
  clis.push(c);
  return c;
};
const startWorker = () => {
  const w = startAgent(['worker'], { ...env(), WORKER_METRICS_PORT: '0' });
  procs.push(w);
  return w;
};

beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
  db = new Client({ connectionString: tdb.url });
  await db.connect();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-runs-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  procs.push(startAgent(['api'], { ...env(), PORT: String(port) }));
  worker = startWorker();
  await waitFor('the API', async () => (await fetch(`${base}/health/ready`)).status === 200, 90_000);
}, 240_000);
afterAll(async () => {
  for (const c of clis) c.child.kill('SIGKILL');
  for (const p of procs) p.child.kill('SIGKILL');
  await db?.end();
  await tdb?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

describe('agent session and agent run against a running platform', () => {
  it('session create prints the id (or the session as JSON) of a session the API serves', async () => {
    const plain = await agent('session', 'create');
    expect(plain.code).toBe(0);
    expect(plain.stdout.trim()).toMatch(new RegExp(`^${UUID.source}$`));
    const titled = await agent('session', 'create', '--title', 'Quarterly numbers', '--json');
    expect(titled.code).toBe(0);
    const s = JSON.parse(titled.stdout) as { id: string };
    const served = (await (await fetch(`${base}/v1/sessions/${s.id}`)).json()) as Record<string, unknown>;
    expect(served).toMatchObject({ id: s.id, title: 'Quarterly numbers', status: 'active' });
    const unknown = await agent('session', 'create', '--agent', 'no_such_agent');
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toMatch(/^error: .*no_such_agent/m);
  }, 120_000);

  it('session fork forks at a sequence (edit and resend runs in the fork); bad input names the option', async () => {
    const sid = (await agent('session', 'create')).stdout.trim();
    expect((await agent('run', '--no-local-worker', '--session', sid, 'What is 6 multiplied by 7?')).code).toBe(0);
    const messages = (await (await fetch(`${base}/v1/sessions/${sid}/messages`)).json()) as {
      items: { sequence: number; role: string }[];
    };
    const user = messages.items.find((m) => m.role === 'user')!;
    const fork = await agent(
      'session',
      'fork',
      sid,
      '--at',
      String(user.sequence),
      '--message',
      'What is 7 multiplied by 7?',
      '--json',
    );
    expect(fork.code).toBe(0);
    const f = JSON.parse(fork.stdout) as { id: string; parent_session_id: string; at_sequence: number; run_id: string };
    expect(f).toMatchObject({
      parent_session_id: sid,
      at_sequence: user.sequence,
      run_id: expect.stringMatching(UUID),
    });
    const got = await agent('run', 'get', f.run_id);
    expect(got.code).toBe(0);
    const plain = await agent('session', 'fork', sid);
    expect(plain.stdout.trim()).toMatch(new RegExp(`^${UUID.source}$`));
    const bad = await agent('session', 'fork', sid, '--at', 'zero');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--at must be a positive whole number/);
    const beyond = await agent('session', 'fork', sid, '--at', '9999');
    expect(beyond.code).toBe(3);
    expect(beyond.stderr).toMatch(/has no sequence 9999/);
  }, 120_000);

  it('run streams a turn the running worker executes; run get and run events show it', async () => {
    const sid = (await agent('session', 'create')).stdout.trim();
    const r = await agent('run', '--no-local-worker', '--session', sid, 'What is 17 multiplied by 23?');
    expect(r.code).toBe(0);
    const runId = new RegExp(`^run (${UUID.source}) \\(session ${sid}\\)$`, 'm').exec(r.stdout)![1];
    expect(r.stdout).toMatch(/run\.claimed\s+worker /);
    expect(r.stdout.trim().split('\n').at(-1)).toBe('The result is 391.');

    const got = await agent('run', 'get', runId);
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ id: runId, sessionId: sid, status: 'completed' });
    const events = await agent('run', 'events', runId);
    expect(events.code).toBe(0);
    expect(events.stdout.split('\n')[0]).toMatch(/^\s*user\.message\.created/);
    expect(events.stdout).toMatch(/^\s*run\.completed/m);
    const ndjson = await agent('run', 'events', runId, '--json');
    const types = ndjson.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { type: string }).type);
    expect(types.at(-1)).toBe('run.completed');
    expect(types).toContain('tool.call.completed');
    expect((await agent('run', 'events', '00000000-0000-4000-8000-000000000000')).code).toBe(3);
  }, 120_000);

  it('run goes through the running API announced in its data directory (or named by AGENT_API_URL): it never opens the database', async () => {
    // A database URL nothing answers: only the HTTP path can succeed.
    const noDb = { ...env(), DATABASE_URL: 'postgres://nobody@127.0.0.1:1/nothing' };
    const announced = await agentCli(['run', 'What is 17 multiplied by 23?'], noDb);
    expect(announced.code).toBe(0);
    expect(announced.stdout).toMatch(/run\.claimed\s+worker /);
    expect(announced.stdout.trim().split('\n').at(-1)).toBe('The result is 391.');
    const named = await agentCli(['run', 'What is 17 multiplied by 23?'], {
      ...noDb,
      AGENT_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'cli-runs-other-')),
      AGENT_API_URL: base,
    });
    expect(named.code).toBe(0);
    expect(named.stdout.trim().split('\n').at(-1)).toBe('The result is 391.');
    const dead = await agentCli(['run', 'hello'], { ...env(), AGENT_API_URL: 'http://127.0.0.1:1' });
    expect(dead.code).toBe(5);
    expect(dead.stderr).toMatch(
      /^error: the API at http:\/\/127\.0\.0\.1:1 \(AGENT_API_URL\) is not ready: .*unset AGENT_API_URL$/m,
    );
    // --in-process builds the platform here even though an API is announced.
    const local = await agent('run', '--in-process', 'What is 17 multiplied by 23?');
    expect(local.code).toBe(0);
    expect(local.stdout.trim().split('\n').at(-1)).toBe('The result is 391.');
  }, 120_000);

  it('run input answers a run that waits for the user; the streaming run then completes', async () => {
    const asking = background('run', '--no-local-worker', 'ask me what my favourite colour is');
    const [, runId] = await asking.waitForOutput(new RegExp(`agent run input (${UUID.source}) "<answer>"`));
    expect(asking.stdout()).toContain('question: what my favourite colour is');
    const answered = await agent('run', 'input', runId, 'blue');
    expect(answered).toMatchObject({ code: 0, stdout: `answer delivered; run resumed (run ${runId})\n` });
    expect(await asking.exited).toBe(0);
    expect(asking.stdout()).toContain('You answered: "blue".');
    const usage = await agent('run', 'input', runId);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('usage: agent run input <run-id> "<answer>"');
  }, 120_000);

  it('run cancel stops a running run (the streaming command ends "run cancelled") and refuses one that ended', async () => {
    // The model never answers, so the run is running until the cancel reaches its worker.
    const slow = background('run', '--no-local-worker', '--model-policy', 'fake:hanging_model', 'What is 6 times 7?');
    const [, runId] = await slow.waitForOutput(new RegExp(`^run (${UUID.source})`, 'm'));
    await slow.waitForOutput(/model\.request\.started/);
    const cancel = await agent('run', 'cancel', runId);
    expect(cancel).toMatchObject({ code: 0, stdout: 'cancel_requested (status running)\n' });
    expect(await slow.exited).toBe(1);
    expect(slow.stdout()).toMatch(/run\.cancelled/);
    expect(slow.stdout().trim().split('\n').at(-1)).toBe('run cancelled');
    const again = await agent('run', 'cancel', runId);
    expect(again.code).toBe(4);
    expect(again.stderr).toContain(`run ${runId} already ended (cancelled); there is nothing to cancel`);
  }, 120_000);
});

describe('agent approval against a running platform', () => {
  it('approval list shows what a run waits for; approve resumes it and the write happens', async () => {
    const sending = background('run', '--no-local-worker', 'send the report to finance');
    const [, approvalId] = await sending.waitForOutput(new RegExp(`waiting for approval (${UUID.source})`));
    const list = await agent('approval', 'list');
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(approvalId);
    const listed = JSON.parse((await agent('approval', 'list', '--json')).stdout) as { id: string; status: string }[];
    expect(listed).toEqual([expect.objectContaining({ id: approvalId, status: 'pending' })]);
    const approved = await agent('approval', 'approve', approvalId);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(new RegExp(`^approval ${approvalId} approved; run ${UUID.source} `));
    expect(await sending.exited).toBe(0);
    expect(sending.stdout().trim().split('\n').at(-1)).toBe('Sent to finance.');
    expect((await agent('approval', 'list')).stdout).toBe('no pending approvals\n');
  }, 120_000);

  it('approval deny tells the model nothing was sent; a second resolution is refused', async () => {
    const publishing = background('run', '--no-local-worker', 'publish the minutes');
    const [, approvalId] = await publishing.waitForOutput(new RegExp(`waiting for approval (${UUID.source})`));
    const denied = await agent('approval', 'deny', approvalId, '--reason', 'not before the board meets');
    expect(denied.code).toBe(0);
    expect(denied.stdout).toMatch(new RegExp(`^approval ${approvalId} denied; `));
    expect(await publishing.exited).toBe(0);
    expect(publishing.stdout()).toMatch(/tool\.call\.denied/);
    const runId = new RegExp(`^run (${UUID.source})`, 'm').exec(publishing.stdout())![1];
    const sent = await db.query(`SELECT count(*)::int AS n FROM demo_external_writes WHERE run_id = $1`, [runId]);
    expect(sent.rows[0]).toEqual({ n: 0 });
    const again = await agent('approval', 'approve', approvalId);
    expect(again.code).toBe(4);
    const all = JSON.parse((await agent('approval', 'list', '--all', '--json')).stdout) as { status: string }[];
    expect(all.map((a) => a.status).sort()).toEqual(['approved', 'denied']);
  }, 120_000);

  it('approval approve --arguments approves with edits: a bad edit is refused naming the field, the good one is what is sent', async () => {
    const sending = background('run', '--no-local-worker', 'send hello to the newsletter');
    const [, approvalId] = await sending.waitForOutput(new RegExp(`waiting for approval (${UUID.source})`));
    const bad = await agent('approval', 'approve', approvalId, '--arguments', '{"text":"","target":"the newsletter"}');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('arguments.text');
    const notJson = await agent('approval', 'approve', approvalId, '--arguments', '{text:');
    expect(notJson.code).not.toBe(0);
    expect(notJson.stderr).toContain('--arguments is not valid JSON');
    const pending = JSON.parse((await agent('approval', 'list', '--json')).stdout) as { id: string }[];
    expect(pending.map((a) => a.id)).toEqual([approvalId]);
    const edited = '{"text":"hello, world","target":"the newsletter"}';
    const approved = await agent('approval', 'approve', approvalId, '--arguments', edited);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(new RegExp(`^approval ${approvalId} approved; `));
    expect(await sending.exited).toBe(0);
    const runId = new RegExp(`^run (${UUID.source})`, 'm').exec(sending.stdout())![1];
    const sent = await db.query(`SELECT content FROM demo_external_writes WHERE run_id = $1`, [runId]);
    expect(sent.rows).toEqual([{ content: 'hello, world' }]);
  }, 120_000);

  it('run review --fail decides an UNCERTAIN write after the worker died mid-effect; the run completes', async () => {
    const call = 'call demo.external_write with {"target":"ops","text":"deploy","simulated_ack_delay_ms":10000}';
    const writing = background('run', '--no-local-worker', '--wait-timeout', '90', call);
    const [, approvalId] = await writing.waitForOutput(new RegExp(`waiting for approval (${UUID.source})`));
    expect((await agent('approval', 'approve', approvalId)).code).toBe(0);
    await writing.waitForOutput(/tool\.call\.effect_started/);
    // The worker dies while the write waits for its acknowledgement: the effect may have happened.
    worker.child.kill('SIGKILL');
    await worker.exited;
    worker = startWorker();
    const [, inv] = await writing.waitForOutput(new RegExp(`agent run review (${UUID.source}) --retry\\|--fail`));
    expect(writing.stdout()).toContain(`waiting for a review of UNCERTAIN demo.external_write ${inv}`);
    const uncertain = await db.query<{ id: string }>(`SELECT id FROM tool_invocations WHERE status = 'uncertain'`);
    expect(uncertain.rows).toEqual([{ id: inv }]);
    expect((await agent('run', 'review', inv)).code).toBe(2); // neither --retry nor --fail
    const reviewed = await agent('run', 'review', inv, '--fail', '--reason', 'checked by hand: not sent');
    expect(reviewed.code).toBe(0);
    expect(reviewed.stdout).toMatch(new RegExp(`^invocation ${inv}: marked failed; run ${UUID.source} `));
    expect(await writing.exited).toBe(0);
    expect(writing.stdout()).toMatch(/tool\.call\.failed/);
    const again = await agent('run', 'review', inv, '--fail');
    expect(again.code).toBe(3);
    expect(again.stderr).toContain('not awaiting an uncertainty review');
  }, 150_000);
});
