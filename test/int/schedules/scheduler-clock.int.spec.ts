import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { sha256Hex } from '../../../src/api/auth/token-file';
import { principalDirectory } from '../../../src/composition/principal-directory';
import { executionScopes } from '../../../src/composition/schedules';
import { silentLogger } from '../../../src/adapters/logging/pino-logger';
import { ToolRegistry } from '../../../src/tools/registry';
import type { Principal } from '../../../src/domain/principal';
import type { Clock } from '../../../src/ports/clock';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { createTestDb, type TestDb } from '../../support/test-db';

/** A clock the test moves; sleeping is real (nothing here sleeps on it). */
class FakeClock implements Clock {
  constructor(private ms: number) {}
  set(iso: string): void {
    this.ms = Date.parse(iso);
  }
  nowMs = () => this.ms;
  nowIso = () => new Date(this.ms).toISOString();
  sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
}

/**
 * Issue 29 items 2–5 and 9 on a fake clock, over a real database: the documented DST instants, no
 * early firing, overlap, coalescing after an outage, fail-closed authority and the auto-pause. Each
 * firing is the scheduler's own transaction (`fireDue`) at the clock's now; the events it writes
 * are stamped by the same clock.
 */
describe('the scheduler on a fake clock', () => {
  let db: TestDb;
  let t: TestPlatform;
  let tokensFile: string;
  const clock = new FakeClock(Date.parse('2027-03-26T12:00:00Z'));
  const owner: Principal = {
    tenantId: 'acme',
    principalId: 'ann',
    roles: new Set(),
    scopes: new Set(['schedules.write', 'tools.use']),
  };

  const writeTokens = (scopes: string[]) =>
    fs.writeFileSync(
      tokensFile,
      JSON.stringify([{ token_sha256: sha256Hex('t-ann'), tenant_id: 'acme', principal_id: 'ann', scopes }]),
    );

  beforeAll(async () => {
    db = await createTestDb();
    tokensFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'sched-clock-')), 'tokens.json');
    writeTokens(['schedules.read', 'schedules.write', 'tools.use']);
    const directory = principalDirectory(
      { authMode: 'token', authTokensFile: tokensFile },
      executionScopes(new ToolRegistry()),
      silentLogger,
    );
    t = await createTestPlatform(
      db.url,
      {},
      { clock, principals: directory, scheduleSettings: { tenantMaxActiveRuns: 0, tenantMaxFiringsPerMinute: 0 } },
    );
  });

  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const svc = () => t.platform.schedules.service;
  /** Schedules of the test now running: cancelled after it, so the next test's clock jumps fire none of them. */
  const created: string[] = [];
  const create = async (req: Parameters<ReturnType<typeof svc>['create']>[1]) => {
    const r = await svc().create(owner, req);
    created.push(r.schedule.id);
    return r;
  };
  afterEach(async () => {
    for (const id of created.splice(0)) await svc().cancel(owner, id);
  });
  const fire = (now: string) => {
    clock.set(now);
    return t.platform.schedules.firing.fireDue(now, 50).then((r) => r.length);
  };
  const ledger = async (id: string) =>
    (
      await t.platform.db.query<{
        nominal_at: Date;
        fired_at: Date;
        status: string;
        reason: string | null;
        missed_count: number;
        run_id: string | null;
      }>(
        'SELECT nominal_at, fired_at, status, reason, missed_count, run_id FROM schedule_occurrences WHERE schedule_id = $1 ORDER BY nominal_at',
        [id],
      )
    ).rows.map((r) => ({ ...r, nominal_at: r.nominal_at.toISOString(), fired_at: r.fired_at.toISOString() }));
  const daily = (time: string, time_zone: string) => ({
    message: 'say good morning',
    cadence: { kind: 'daily', time, time_zone },
  });

  it('a daily 02:30 Europe/Paris fires once on the 2027 spring-forward day, at 03:00 CEST, never early', async () => {
    clock.set('2027-03-26T12:00:00Z');
    const { schedule } = await create(daily('02:30', 'Europe/Paris'));
    expect(schedule.nextFireAt).toBe('2027-03-27T01:30:00.000Z');
    for (const at of ['2027-03-27T01:30:00.000Z', '2027-03-28T01:00:00.000Z', '2027-03-29T00:30:00.000Z']) {
      expect(await fire(new Date(Date.parse(at) - 1).toISOString())).toBe(0); // a millisecond early: nothing
      expect(await fire(at)).toBe(1);
      expect(await fire(at)).toBe(0);
    }
    const l = await ledger(schedule.id);
    expect(l.map((o) => o.nominal_at)).toEqual([
      '2027-03-27T01:30:00.000Z',
      '2027-03-28T01:00:00.000Z',
      '2027-03-29T00:30:00.000Z',
    ]);
    // Each recorded at its instant; no worker runs the first run here, so the later two are overlaps.
    for (const o of l) expect(o.fired_at).toBe(o.nominal_at);
    expect(l.map((o) => o.status)).toEqual(['fired', 'skipped_overlap', 'skipped_overlap']);
    expect(t.platform.schedules.calendar.local('2027-03-28T01:00:00.000Z', 'Europe/Paris')).toBe(
      '2027-03-28T03:00:00+02:00',
    );
  });

  it('a daily 02:30 Europe/Paris fires once on the 2027 fall-back day, at the first 02:30; and America/New_York alike', async () => {
    clock.set('2027-10-29T12:00:00Z');
    const paris = (await create(daily('02:30', 'Europe/Paris'))).schedule;
    // The next firing, each time the clock reaches it: the fold's second 02:30 (01:30Z) never fires.
    for (const at of [
      '2027-10-30T00:30:00.000Z',
      '2027-10-31T00:30:00.000Z',
      '2027-10-31T01:30:00.000Z',
      '2027-11-01T01:30:00.000Z',
    ])
      await fire(at);
    expect((await ledger(paris.id)).map((o) => o.nominal_at)).toEqual([
      '2027-10-30T00:30:00.000Z',
      '2027-10-31T00:30:00.000Z',
      '2027-11-01T01:30:00.000Z',
    ]);
    clock.set('2027-11-06T12:00:00Z');
    const ny = (await create(daily('01:30', 'America/New_York'))).schedule;
    for (const at of ['2027-11-07T05:30:00.000Z', '2027-11-07T06:30:00.000Z', '2027-11-08T06:30:00.000Z'])
      await fire(at);
    expect((await ledger(ny.id)).map((o) => o.nominal_at)).toEqual([
      '2027-11-07T05:30:00.000Z',
      '2027-11-08T06:30:00.000Z',
    ]);
  });

  it('skips an occurrence while the previous run is still active', async () => {
    clock.set('2027-12-01T12:00:00Z');
    const { schedule } = await create(daily('08:00', 'UTC'));
    await fire('2027-12-02T08:00:00.000Z');
    await fire('2027-12-03T08:00:00.000Z'); // no worker ran the first run: it is still queued
    const l = await ledger(schedule.id);
    expect(l.map((o) => o.status)).toEqual(['fired', 'skipped_overlap']);
    expect(l[1].run_id).toBeNull();
  });

  it('after a simulated outage fires one coalesced catch-up, the missed instants counted on it, never a backlog', async () => {
    clock.set('2028-01-01T12:00:00Z');
    const { schedule } = await create({ ...daily('08:00', 'UTC'), misfire: 'run_once' });
    const skip = (await create({ ...daily('08:00', 'UTC'), misfire: 'skip' })).schedule;
    // Down from Jan 2 to Jan 10, 09:00: eight instants were due (Jan 2 … Jan 9), plus Jan 10 08:00.
    expect(await fire('2028-01-10T09:00:00.000Z')).toBe(2);
    expect(await ledger(schedule.id)).toEqual([
      expect.objectContaining({ nominal_at: '2028-01-10T08:00:00.000Z', status: 'fired', missed_count: 8 }),
    ]);
    expect(await ledger(skip.id)).toEqual([
      expect.objectContaining({
        nominal_at: '2028-01-10T08:00:00.000Z',
        status: 'missed',
        missed_count: 8,
        run_id: null,
      }),
    ]);
    const after = await svc().get(owner, schedule.id);
    expect(after.nextFireAt).toBe('2028-01-11T08:00:00.000Z');
  });

  it('fails closed, before any session exists, when the principal lost tools.use; pauses itself after three', async () => {
    clock.set('2028-02-01T12:00:00Z');
    const { schedule } = await svc().create(owner, daily('08:00', 'UTC'));
    expect(schedule.scopes).toEqual(['tools.use']);
    writeTokens(['schedules.read', 'schedules.write']);
    await new Promise((r) => setTimeout(r, 1100)); // the directory re-reads the file at most once a second
    const sessionsBefore = Number(
      (await t.platform.db.query<{ n: string }>('SELECT count(*)::text AS n FROM sessions')).rows[0].n,
    );
    for (const at of ['2028-02-02T08:00:00.000Z', '2028-02-03T08:00:00.000Z', '2028-02-04T08:00:00.000Z'])
      await fire(at);
    const l = await ledger(schedule.id);
    expect(l.map((o) => [o.status, o.reason])).toEqual([
      ['failed', 'scope_revoked'],
      ['failed', 'scope_revoked'],
      ['failed', 'scope_revoked'],
    ]);
    expect(
      Number((await t.platform.db.query<{ n: string }>('SELECT count(*)::text AS n FROM sessions')).rows[0].n),
    ).toBe(sessionsBefore);
    // Each failed occurrence is in the owner's inbox (issue 31 item 1), content-free.
    const inbox = await t.platform.notifications.inbox.list(owner, 50, null);
    const failedNotes = inbox.items.filter((n) => n.kind === 'schedule.occurrence.failed');
    expect(failedNotes).toHaveLength(3);
    expect(failedNotes[0].summary).toMatchObject({ title: 'A scheduled run could not start', reason: 'scope_revoked' });
    expect(failedNotes[0].links.schedule).toBe(`/v1/schedules/${schedule.id}`);
    expect(JSON.stringify(failedNotes)).not.toContain('tools.use');
    const paused = await svc().get(owner, schedule.id);
    expect(paused).toMatchObject({ status: 'paused', nextFireAt: null, consecutiveFailures: 3 });
    expect(paused.pausedReason).toMatch(/3 consecutive occurrences failed; the last: scope_revoked/);
    expect(await fire('2028-02-05T08:00:00.000Z')).toBe(0);
    // Restored authority and a resume: the next firing is the first one after now, nothing backfilled.
    writeTokens(['schedules.read', 'schedules.write', 'tools.use']);
    await new Promise((r) => setTimeout(r, 1100));
    clock.set('2028-02-06T12:00:00.000Z');
    expect((await svc().resume(owner, schedule.id)).nextFireAt).toBe('2028-02-07T08:00:00.000Z');
    await fire('2028-02-07T08:00:00.000Z');
    expect((await ledger(schedule.id)).map((o) => o.status)).toEqual(['failed', 'failed', 'failed', 'fired']);
  });
});
