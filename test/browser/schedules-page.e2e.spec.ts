import { createTestDb, type TestDb } from '../support/test-db';
import { call, startApi, type ApiHarness } from '../int/api/api-harness';
import { ensureDashboardBuilt, describeWithChromium, launchBrowser, type Browser } from './browser-harness';

// The dashboard's Schedules page (issue 29): each schedule's cadence in words and its next firing in
// its own zone; a fired occurrence linked to its run; pause, resume and cancel from the page.
let tdb: TestDb;
let api: ApiHarness;
let browser: Browser;
let stopScheduler: () => Promise<void>;

beforeAll(async () => {
  ensureDashboardBuilt();
  tdb = await createTestDb();
  api = await startApi(tdb.url, {}, { worker: true });
  const scheduler = api.t.platform.schedules.createScheduler({ pollMs: 300 });
  await scheduler.start();
  stopScheduler = () => scheduler.stop();
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await stopScheduler?.();
  await api?.close();
  await tdb?.drop();
});

const create = async (body: Record<string, unknown>): Promise<Record<string, string>> => {
  const r = await call(api.base, 'POST', '/v1/schedules', { body });
  expect(r.status).toBe(201);
  return r.body;
};

describeWithChromium('dashboard Schedules page', () => {
  it('shows cadence and next firing, links a fired occurrence to its run, pauses, resumes and cancels', async () => {
    const once = await create({ message: 'What is 2 plus 2?', cadence: { kind: 'once', in_seconds: 1 } });
    const daily = await create({
      message: 'say good morning',
      title: 'Morning greeting',
      cadence: { kind: 'daily', time: '08:00', time_zone: 'Europe/Paris' },
    });
    let occurrences: { run_id: string }[] = [];
    for (let i = 0; i < 100 && occurrences.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      occurrences = (await call(api.base, 'GET', `/v1/schedules/${once.id}/occurrences`)).body.items;
    }
    expect(await api.t.waitForTerminal(occurrences[0].run_id, 30_000)).toBe('completed');

    const page = await browser.page();
    await page.goto(`${api.base}/schedules`);
    const list = page.getByRole('list', { name: 'schedules' });
    const morning = list.locator(`li[data-schedule="${daily.id}"]`);
    await morning.waitFor();
    await expect(morning.locator('.badge').textContent()).resolves.toBe('active');
    await expect(morning.textContent()).resolves.toContain(daily.cadence_description);
    await expect(morning.locator('.next-firing').textContent()).resolves.toBe(daily.next_fire_at_local);
    expect(daily.next_fire_at_local).toMatch(/T08:00/);

    // The one-time schedule fired: its occurrence links the run that answered.
    const fired = list.locator(`li[data-schedule="${once.id}"]`);
    await expect(fired.locator('.badge').first().textContent()).resolves.toBe('completed');
    await fired.getByRole('button', { name: 'Occurrences' }).click();
    const ledger = fired.getByRole('list', { name: 'occurrences' });
    await ledger.getByText('fired').waitFor();
    await expect(ledger.getByRole('link').first().getAttribute('href')).resolves.toBe(`/runs/${occurrences[0].run_id}`);

    // Pause, resume, then cancel after confirming: each recorded by the API.
    const row = () => list.locator(`li[data-schedule="${daily.id}"]`);
    await row().getByRole('button', { name: 'Pause' }).click();
    await row().getByRole('button', { name: 'Resume' }).waitFor();
    expect((await call(api.base, 'GET', `/v1/schedules/${daily.id}`)).body.status).toBe('paused');
    await row().getByRole('button', { name: 'Resume' }).click();
    await row().getByRole('button', { name: 'Pause' }).waitFor();
    await row().getByRole('button', { name: 'Cancel schedule' }).click();
    await row().getByRole('button', { name: 'Yes, cancel it' }).click();
    await row().locator('.badge', { hasText: 'cancelled' }).waitFor();
    expect((await call(api.base, 'GET', `/v1/schedules/${daily.id}`)).body.status).toBe('cancelled');
  });
});
