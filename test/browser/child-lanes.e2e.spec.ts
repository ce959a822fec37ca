import { createTestDb, type TestDb } from '../support/test-db';
import { call, startApi, type ApiHarness } from '../int/api/api-harness';
import { ensureDashboardBuilt, describeWithChromium, launchBrowser, type Browser } from './browser-harness';

// Issue 32: a parent's run page shows each child run of its delegate.run as an expandable lane, with
// the child's own live timeline and answer when opened.
let tdb: TestDb;
let api: ApiHarness;
let browser: Browser;

beforeAll(async () => {
  ensureDashboardBuilt();
  tdb = await createTestDb();
  api = await startApi(tdb.url, { delegationEnabled: true, delegationSweepMs: 500 }, { worker: true });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await api?.close();
  await tdb?.drop();
});

describeWithChromium('dashboard child lanes', () => {
  it('lists both children of "delegate: a; b" under the parent and opens a child’s timeline', async () => {
    const s = await call(api.base, 'POST', '/v1/sessions', { body: {} });
    const m = await call(api.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: { content: [{ type: 'text', text: 'delegate: what is 17 times 23; what is 6 times 7' }] },
    });
    expect(await api.t.waitForTerminal(m.body.run_id, 30_000)).toBe('completed');
    const page = await browser.page();
    await page.goto(`${api.base}/runs/${m.body.run_id}`);
    const lanes = page.getByRole('region', { name: 'child runs' });
    await lanes.locator('details.child-lane').nth(1).waitFor();
    await expect(lanes.locator('details.child-lane').count()).resolves.toBe(2);
    await expect(lanes.textContent()).resolves.toMatch(/Child 1\s*completed/);
    await lanes.locator('details.child-lane summary').first().click();
    await lanes.locator('.child-timeline .bubble.assistant').first().waitFor();
    await expect(lanes.locator('.child-timeline .bubble.assistant').first().textContent()).resolves.toContain('391');
  });
});
