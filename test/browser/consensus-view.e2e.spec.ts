import { createTestDb, type TestDb } from '../support/test-db';
import { call, startApi, type ApiHarness } from '../int/api/api-harness';
import { ensureDashboardBuilt, describeWithChromium, launchBrowser, type Browser } from './browser-harness';

// Issue 32: a consensus run's page shows every proposal, which the synthesis used, and the synthesis.
let tdb: TestDb;
let api: ApiHarness;
let browser: Browser;

beforeAll(async () => {
  ensureDashboardBuilt();
  tdb = await createTestDb();
  api = await startApi(tdb.url, {}, { worker: true });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await api?.close();
  await tdb?.drop();
});

describeWithChromium('dashboard consensus view', () => {
  it('shows both demo engines’ proposals and the synthesis quoting them on the run page', async () => {
    const s = await call(api.base, 'POST', '/v1/sessions', { body: {} });
    const m = await call(api.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: { content: [{ type: 'text', text: 'consensus: what is 17 times 23' }] },
    });
    expect(await api.t.waitForTerminal(m.body.run_id, 30_000)).toBe('completed');
    const page = await browser.page();
    await page.goto(`${api.base}/runs/${m.body.run_id}`);
    const view = page.getByRole('region', { name: 'consensus' });
    await view.locator('.synthesis .bubble.assistant').waitFor();
    const proposals = view.locator('ol.proposals > li');
    await expect(proposals.count()).resolves.toBe(2);
    await expect(proposals.nth(0).textContent()).resolves.toContain(
      'Engine 1 proposes: the answer is the value of 17 * 23.',
    );
    await expect(proposals.nth(1).textContent()).resolves.toContain('used in the synthesis');
    const synthesis = (await view.locator('.synthesis .bubble.assistant').textContent()) ?? '';
    expect(synthesis).toContain('engine 1 (demo) said "Engine 1 proposes');
    expect(synthesis).toContain('engine 2 (demo) said "Engine 2 proposes');
    // The engines and the synthesizer are the run's child lanes too.
    await page.getByRole('region', { name: 'child runs' }).locator('details.child-lane').nth(2).waitFor();
  });
});
