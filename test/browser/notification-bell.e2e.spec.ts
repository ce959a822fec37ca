import { createTestDb, type TestDb } from '../support/test-db';
import { startApi, type ApiHarness } from '../int/api/api-harness';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import { ensureDashboardBuilt, describeWithChromium, launchBrowser, type Browser } from './browser-harness';

// The dashboard's notification bell (issue 31 item 2): the unread count follows the notification
// stream live; the list shows the approval request; approving it inline completes the run and
// marks the notification read (the count drops to zero).
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

describeWithChromium('dashboard notification bell', () => {
  it('counts an approval request live, and approving it inline completes the run and marks it read', async () => {
    const page = await browser.page();
    await page.goto(`${api.base}/`);
    const bell = page.getByRole('button', { name: /^notifications: \d+ unread$/ });
    await page.getByRole('button', { name: 'notifications: 0 unread' }).waitFor();
    // Submitted after the page opened: the count can only come from the stream.
    const { runId } = await api.t.submit('send hello to the newsletter');
    await page.getByRole('button', { name: 'notifications: 1 unread' }).waitFor({ timeout: 20_000 });
    await bell.click();
    const list = page.getByRole('list', { name: 'notifications' });
    const item = list.locator('li[data-notification]', { hasText: 'An action is waiting for your approval' });
    await item.waitFor();
    await expect(item.textContent()).resolves.not.toContain('newsletter');
    await item.getByRole('button', { name: 'Approve' }).click();
    expect(await api.t.waitForTerminal(runId)).toBe('completed');
    await page.getByRole('button', { name: 'notifications: 0 unread' }).waitFor({ timeout: 10_000 });
    const inbox = await api.t.platform.notifications.inbox.list(LOCAL_PRINCIPAL, 10, null);
    const approval = inbox.items.find((n) => n.kind === 'approval.requested');
    expect(approval?.readAt).not.toBeNull();
  });
});
