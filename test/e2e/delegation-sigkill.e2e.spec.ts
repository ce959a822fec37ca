import { createTestDb, type TestDb } from '../support/test-db';
import { createTestPlatform, type TestPlatform } from '../support/platform';
import { ensureBuilt, startAgent, waitFor, type Proc } from '../support/processes';
import type { StoredEvent } from '../../src/domain/events/payloads';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';

/**
 * Issue 32 acceptance, with real worker processes: SIGKILL the worker while a parent's children
 * run. Every child completes (re-claimed by the next worker), the parent resumes exactly once after
 * the join, and no child completes twice. Each demo model call takes 700 ms, so the kill lands while
 * the children work.
 */
let tdb: TestDb;
let t: TestPlatform;
const procs: Proc[] = [];

beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url);
}, 120_000);
afterAll(async () => {
  for (const p of procs) p.child.kill('SIGKILL');
  await t?.close();
  await tdb?.drop();
});

const env = () => ({
  DATABASE_URL: tdb.url,
  DELEGATION_ENABLED: '1',
  DELEGATION_SWEEP_MS: '500',
  FAKE_MODEL_LATENCY_MS: '700',
  AGENT_LEASE_SECONDS: '3',
  AGENT_POLL_INTERVAL_MS: '500',
});
const childrenOf = async (parentRunId: string) =>
  (
    await t.platform.db.query<{ id: string; session_id: string; status: string }>(
      `SELECT id, session_id, status FROM runs WHERE parent_run_id = $1 ORDER BY id`,
      [parentRunId],
    )
  ).rows;
const count = (events: readonly StoredEvent[], type: string) => events.filter((e) => e.type === type).length;

describe('delegate.run across a worker SIGKILL', () => {
  it('every child completes, the parent resumes exactly once, no child completes twice', async () => {
    const first = startAgent(['worker'], env());
    procs.push(first);
    const { runId } = await t.submit('delegate: what is 17 times 23; what time is it in Asia/Tokyo');
    const children = await waitFor(
      'two children working',
      async () => {
        const c = await childrenOf(runId);
        return c.length === 2 && c.some((x) => x.status === 'running') ? c : null;
      },
      60_000,
      50,
    ).catch((e: Error) => {
      throw new Error(`${e.message}; worker output:\n${first.output()}`);
    });
    first.child.kill('SIGKILL');
    await first.exited;
    expect((await t.platform.runs.get(runId, null))?.status).toBe('waiting_for_children');

    const second = startAgent(['worker'], env());
    procs.push(second);
    expect(await t.waitForTerminal(runId, 90_000)).toBe('completed');
    const parent = await t.platform.store.listRunEvents(runId, LOCAL_PRINCIPAL);
    expect(count(parent, 'run.children_joined')).toBe(1);
    const joined = parent.findIndex((e) => e.type === 'run.children_joined');
    expect(parent.slice(joined).filter((e) => e.type === 'run.resumed')).toHaveLength(1);
    expect(parent[joined + 1].type).toBe('run.resumed');
    const answer = (await t.platform.runs.get(runId, null))?.finalText ?? '';
    expect(answer).toContain('391');
    expect(answer).toContain('Asia/Tokyo');
    for (const c of children) {
      const events = await t.platform.store.listRunEvents(c.id, LOCAL_PRINCIPAL);
      expect({ child: c.id, completed: count(events, 'run.completed') }).toEqual({ child: c.id, completed: 1 });
      expect((await t.platform.runs.get(c.id, null))?.status).toBe('completed');
    }
    // At least one child was running when the worker died: its lease expired and it was claimed again.
    const claims = await Promise.all(
      children.map(async (c) => count(await t.platform.store.listRunEvents(c.id, LOCAL_PRINCIPAL), 'run.claimed')),
    );
    expect(Math.max(...claims)).toBeGreaterThanOrEqual(2);
    second.child.kill('SIGTERM');
    await second.exited;
  }, 180_000);
});
