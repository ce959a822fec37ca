import { createTestDb, type TestDb } from '../support/test-db';
import { call, startApi, type ApiHarness } from '../int/api/api-harness';
import { ensureDashboardBuilt, describeWithChromium, launchBrowser, type Browser } from './browser-harness';

// Issue 33, fork in the dashboard: "Fork from here (edit and resend)" on a user message opens the
// fork with the parent's earlier turns inherited and the edited message answered; both sessions
// appear in the fork tree.
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

async function turn(sessionId: string, text: string): Promise<void> {
  const m = await call(api.base, 'POST', `/v1/sessions/${sessionId}/messages`, {
    body: { content: [{ type: 'text', text }] },
  });
  expect(await api.t.waitForTerminal(m.body.run_id, 30_000)).toBe('completed');
}

describeWithChromium('dashboard fork', () => {
  it('edits and resends a message in a fork, shows what it inherits and the fork tree', async () => {
    const parent = (await call(api.base, 'POST', '/v1/sessions', { body: {} })).body.id;
    await turn(parent, 'What is 6 multiplied by 7?');
    await turn(parent, 'What is 8 multiplied by 9?');
    const page = await browser.page();
    await page.goto(`${api.base}/sessions/${parent}`);
    const second = page.locator('article.run').nth(1);
    await second.getByRole('button', { name: 'Fork from here (edit and resend)' }).click();
    const edit = second.getByRole('form', { name: 'edit and resend in a fork' });
    await edit.getByRole('textbox').fill('What is 9 multiplied by 9?');
    await edit.getByRole('button', { name: 'Fork and send' }).click();
    await page.waitForURL((u) => /\/sessions\/[0-9a-f-]{36}$/.test(u.pathname) && !u.pathname.endsWith(parent));
    const origin = page.locator('[data-fork-origin]');
    // The count appears once the parent's messages have been read; until then the summary says so.
    await origin.locator('summary', { hasText: '2 inherited messages' }).waitFor();
    await expect(origin.textContent()).resolves.toContain('What is 6 multiplied by 7?');
    await page.locator('article.run .bubble.assistant').filter({ hasText: '81' }).waitFor();
    await expect(page.locator('body').textContent()).resolves.not.toContain('What is 8 multiplied by 9?');
    await page.getByText('Fork tree').click();
    const tree = page.getByRole('group', { name: 'fork tree' });
    await expect(tree.locator(`[data-fork-node="${parent}"]`).count()).resolves.toBe(1);
    await expect(tree.locator('[aria-current="page"]').count()).resolves.toBe(1);
  });
});
