import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { createTestDb, type TestDb } from '../../support/test-db';

/**
 * Issue 29 item 3: several schedulers (here two platforms with two loops each, over one database)
 * racing over the same due schedules record exactly one occurrence, one session and one run per
 * nominal instant, none before its instant.
 */
describe('schedulers racing over due schedules', () => {
  let db: TestDb;
  let a: TestPlatform;
  let b: TestPlatform;
  const N = 60;

  beforeAll(async () => {
    db = await createTestDb();
    // No tenant ceilings here: every one of the N firings of the one local tenant is admitted.
    const unlimited = { scheduleSettings: { tenantMaxActiveRuns: 0, tenantMaxFiringsPerMinute: 0 } };
    a = await createTestPlatform(db.url, {}, unlimited);
    b = await createTestPlatform(db.url, {}, unlimited);
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  const rows = async <T>(sql: string, values: unknown[] = []) => (await a.platform.db.query(sql, values)).rows as T[];

  it('records exactly one occurrence and one run per schedule and instant, never early', async () => {
    const ids: string[] = [];
    for (let i = 0; i < N; i++) {
      const r = await a.platform.schedules.service.create(LOCAL_PRINCIPAL, {
        message: `What is ${i} plus 1?`,
        cadence: { kind: 'once', in_seconds: 2 },
      });
      ids.push(r.schedule.id);
    }
    const schedulers = [a, b].map((t) =>
      t.platform.schedules.createScheduler({ concurrency: 2, batchSize: 4, pollMs: 300 }),
    );
    await Promise.all(schedulers.map((s) => s.start()));
    try {
      const end = Date.now() + 60_000;
      while (Date.now() < end) {
        const [{ n }] = await rows<{ n: string }>('SELECT count(*)::text AS n FROM schedule_occurrences');
        if (Number(n) >= N) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      // Another pass of both, after everything was recorded, finds nothing more to do.
      expect(await schedulers[0].drainDue()).toBe(0);
      expect(await schedulers[1].drainDue()).toBe(0);
    } finally {
      await Promise.all(schedulers.map((s) => s.stop()));
    }
    const occ = await rows<{ schedule_id: string; status: string; nominal_at: Date; fired_at: Date; run_id: string }>(
      'SELECT schedule_id, status, nominal_at, fired_at, run_id FROM schedule_occurrences',
    );
    expect(occ).toHaveLength(N);
    expect(new Set(occ.map((o) => o.schedule_id))).toEqual(new Set(ids));
    expect(occ.every((o) => o.status === 'fired')).toBe(true);
    for (const o of occ) expect(o.fired_at.getTime()).toBeGreaterThanOrEqual(o.nominal_at.getTime());

    const runs = await rows<{ id: string; session_id: string; priority: number }>(
      "SELECT r.id, r.session_id, r.priority FROM runs r JOIN sessions s ON s.id = r.session_id WHERE s.metadata ? 'schedule_id'",
    );
    expect(runs).toHaveLength(N);
    expect(new Set(runs.map((r) => r.session_id)).size).toBe(N);
    expect(new Set(runs.map((r) => r.id))).toEqual(new Set(occ.map((o) => o.run_id)));
    expect(runs.every((r) => r.priority === 200)).toBe(true);

    // The events themselves: every fired event and every queued run is stamped at or after its instant.
    const fired = await rows<{ created_at: Date; nominal: string }>(
      "SELECT created_at, payload->>'nominalAt' AS nominal FROM events WHERE event_type = 'schedule.occurrence.fired'",
    );
    expect(fired).toHaveLength(N);
    for (const f of fired) expect(f.created_at.getTime()).toBeGreaterThanOrEqual(Date.parse(f.nominal));
    const [{ n: done }] = await rows<{ n: string }>(
      "SELECT count(*)::text AS n FROM schedules WHERE status = 'completed'",
    );
    expect(Number(done)).toBe(N);
  });

  it('refuses a second occurrence of one instant at the ledger, whatever the stream allowed', async () => {
    const r = await a.platform.schedules.service.create(LOCAL_PRINCIPAL, {
      message: 'ping',
      cadence: { kind: 'daily', time: '08:00', time_zone: 'UTC' },
    });
    const nominal = r.schedule.nextFireAt!;
    await a.platform.db.query(
      `INSERT INTO schedule_occurrences (id, schedule_id, tenant_id, nominal_at, fired_at, status, revision)
       VALUES (gen_random_uuid(), $1, 'local', $2, now(), 'fired', 1)`,
      [r.schedule.id, nominal],
    );
    // Fire it "at" its instant: the stream is at the expected sequence, but the ledger already has the instant.
    await expect(a.platform.schedules.firing.fireDue(nominal, 1)).rejects.toThrow(/schedule_occurrences_instant_key/);
    const [{ n }] = await rows<{ n: string }>(
      'SELECT count(*)::text AS n FROM runs WHERE session_id IN (SELECT id FROM sessions WHERE metadata->>$1 = $2)',
      ['schedule_id', r.schedule.id],
    );
    expect(Number(n)).toBe(0);
    await a.platform.db.query('DELETE FROM schedule_occurrences WHERE schedule_id = $1', [r.schedule.id]);
  });

  it('rebuilds the schedules and the ledger from the log with zero differences', async () => {
    const r = await a.platform.schedules.service.create(LOCAL_PRINCIPAL, {
      message: 'weekly',
      cadence: { kind: 'weekly', days: ['tue'], time: '10:00', time_zone: 'America/New_York' },
    });
    await a.platform.schedules.service.pause(LOCAL_PRINCIPAL, r.schedule.id);
    await a.platform.schedules.service.update(LOCAL_PRINCIPAL, r.schedule.id, { message: 'weekly, revised' });
    await a.platform.schedules.service.resume(LOCAL_PRINCIPAL, r.schedule.id);
    await a.platform.schedules.service.cancel(LOCAL_PRINCIPAL, r.schedule.id, 'done');
    const report = await a.platform.rebuildProjections({ verify: true });
    for (const name of ['schedules', 'schedule_occurrences', 'sessions', 'runs'])
      expect(report.projections.find((p) => p.name === name)).toMatchObject({ differingRows: 0 });
    expect(report.projections.find((p) => p.name === 'schedule_occurrences')?.rows).toBeGreaterThanOrEqual(N);
  });
});
