import { call, startApi, type ApiHarness } from '../api/api-harness';
import { createTestDb, type TestDb } from '../../support/test-db';

/**
 * Issue 29: a schedule created over HTTP fires as an ordinary durable run, linked from its
 * occurrence; bad input names its field and stores nothing.
 */
describe('schedules over HTTP', () => {
  let db: TestDb;
  let api: ApiHarness;

  beforeAll(async () => {
    db = await createTestDb();
    api = await startApi(db.url, {}, { worker: true });
  });

  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const count = async (table: string) =>
    Number((await api.t.platform.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`)).rows[0].n);

  it('creates a one-time schedule that fires about two seconds later; its occurrence links the run, which answers 4', async () => {
    const scheduler = api.t.platform.schedules.createScheduler({ pollMs: 500 });
    await scheduler.start();
    try {
      const before = Date.now();
      const created = await call(api.base, 'POST', '/v1/schedules', {
        body: { message: 'What is 2 plus 2?', cadence: { kind: 'once', in_seconds: 2 } },
      });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({
        status: 'active',
        revision: 1,
        cadence: { kind: 'once', time_zone: 'UTC' },
      });
      const next = Date.parse(created.body.next_fire_at as string);
      expect(next).toBeGreaterThanOrEqual(before + 2000);
      expect(next).toBeLessThanOrEqual(Date.now() + 3000);
      const id = created.body.id;

      let occ: { status: number; body: { items: Record<string, string>[] } } = { status: 0, body: { items: [] } };
      for (let i = 0; i < 200 && occ.body.items.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        occ = await call(api.base, 'GET', `/v1/schedules/${id}/occurrences`);
      }
      expect(occ.status).toBe(200);
      expect(occ.body.items).toHaveLength(1);
      const o = occ.body.items[0];
      expect(o).toMatchObject({ status: 'fired', nominal_at: created.body.next_fire_at });
      expect(Date.parse(o.fired_at)).toBeGreaterThanOrEqual(Date.parse(o.nominal_at));
      expect(await api.t.waitForTerminal(o.run_id, 30_000)).toBe('completed');
      const run = await call(api.base, 'GET', `/v1/runs/${o.run_id}`);
      expect(run.body.final_text).toMatch(/\b4\b/);

      const after = await call(api.base, 'GET', `/v1/schedules/${id}`);
      expect(after.body).toMatchObject({ status: 'completed', next_fire_at: null, last_run_id: o.run_id });
    } finally {
      await scheduler.stop();
    }
  });

  it('lists the caller’s schedules with next_fire_at in UTC and in the schedule’s own zone', async () => {
    const created = await call(api.base, 'POST', '/v1/schedules', {
      body: { message: 'say good morning', cadence: { kind: 'daily', time: '08:00', time_zone: 'Europe/Paris' } },
    });
    expect(created.status).toBe(201);
    const list = await call(api.base, 'GET', '/v1/schedules?status=active');
    const mine = list.body.items.find((s: { id: string }) => s.id === created.body.id);
    expect(mine.next_fire_at_local).toMatch(/T08:00:00\+0[12]:00$/);
    expect(new Date(mine.next_fire_at).toISOString()).toBe(mine.next_fire_at);
    expect(mine.cadence_description).toBe('every day at 08:00 (Europe/Paris)');
  });

  it('pauses, resumes without backfill, updates to a new revision and cancels', async () => {
    const created = await call(api.base, 'POST', '/v1/schedules', {
      body: {
        message: 'weekly digest',
        cadence: { kind: 'weekly', days: ['mon', 'fri'], time: '09:00', time_zone: 'UTC' },
      },
    });
    const id = created.body.id;
    const paused = await call(api.base, 'POST', `/v1/schedules/${id}/pause`);
    expect(paused.body).toMatchObject({ status: 'paused', next_fire_at: null });
    const resumed = await call(api.base, 'POST', `/v1/schedules/${id}/resume`);
    expect(resumed.body.status).toBe('active');
    expect(Date.parse(resumed.body.next_fire_at)).toBeGreaterThan(Date.now());
    const updated = await call(api.base, 'PATCH', `/v1/schedules/${id}`, {
      body: { cadence: { kind: 'daily', time: '07:15', time_zone: 'UTC' }, expected_revision: 1 },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ revision: 2, cadence: { kind: 'daily', time: '07:15' } });
    const stale = await call(api.base, 'PATCH', `/v1/schedules/${id}`, {
      body: { message: 'other', expected_revision: 1 },
    });
    expect(stale.status).toBe(409);
    const cancelled = await call(api.base, 'DELETE', `/v1/schedules/${id}`);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', next_fire_at: null });
    expect((await call(api.base, 'POST', `/v1/schedules/${id}/resume`)).status).toBe(409);
    expect((await call(api.base, 'GET', '/v1/schedules/00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it.each([
    ['an unknown zone', { kind: 'daily', time: '08:00', time_zone: 'Mars/Olympus' }, 'cadence.time_zone'],
    [
      'a six-field cron expression',
      { kind: 'cron', expression: '0 0 8 * * *', time_zone: 'UTC' },
      'cadence.expression',
    ],
    ['a one-time instant in the past', { kind: 'once', at: '2020-01-01T08:00', time_zone: 'UTC' }, 'cadence.at'],
    ['February 30', { kind: 'yearly', month: 2, day: 30, time: '08:00', time_zone: 'UTC' }, 'cadence.day'],
  ])('refuses %s naming the field, storing nothing', async (_what, cadence, field) => {
    const events = await count('events');
    const r = await call(api.base, 'POST', '/v1/schedules', { body: { message: 'x', cadence } });
    expect(r.status).toBe(400);
    expect(r.body.error.details.field).toBe(field);
    expect(await count('events')).toBe(events);
  });

  it('refuses a scope its creator lacks', async () => {
    const events = await count('events');
    const r = await call(api.base, 'POST', '/v1/schedules', {
      body: {
        message: 'x',
        cadence: { kind: 'daily', time: '08:00', time_zone: 'UTC' },
        scopes: ['tools.use', 'billing.admin'],
      },
    });
    expect(r.status).toBe(403);
    expect(r.body.error.details).toMatchObject({ field: 'scopes', missing: ['billing.admin'] });
    expect(await count('events')).toBe(events);
  });
});
