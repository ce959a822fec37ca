import { createTestDb, type TestDb } from '../support/test-db';
import { startApi, type ApiHarness } from '../int/api/api-harness';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import { ensureDashboardBuilt, describeWithChromium, launchBrowser, type Browser } from './browser-harness';

// The dashboard's Memory page (issue 30): the memory a run remembered, with a link to the session
// event it came from; a contradiction visible as superseded; an edit and a deletion from the page.
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

async function say(text: string): Promise<string> {
  const { runId, sessionId } = await api.t.submit(text);
  expect(await api.t.waitForTerminal(runId)).toBe('completed');
  return sessionId;
}

describeWithChromium('dashboard Memory page', () => {
  it('lists memories with their source, shows supersession, edits and deletes', async () => {
    const session1 = await say('remember that my team is called Blue Falcon');
    await say('remember that my team is called Red Fox');
    const page = await browser.page();
    await page.goto(`${api.base}/memories`);
    const list = page.getByRole('list', { name: 'memories' });
    const blue = list.locator('li[data-memory]', { hasText: 'my team is called Blue Falcon' });
    const red = list.locator('li[data-memory]', { hasText: 'my team is called Red Fox' });
    await blue.waitFor();
    await expect(blue.locator('.badge').textContent()).resolves.toBe('superseded');
    await expect(red.locator('.badge').textContent()).resolves.toBe('active');
    await expect(blue.textContent()).resolves.toContain('superseded by');
    // Where it came from: a link to session 1's event.
    await blue.getByRole('button', { name: 'Details' }).click();
    const source = blue.getByRole('list', { name: 'source events' });
    await source.getByText('user.message.created').waitFor();
    await expect(source.getByRole('link').first().getAttribute('href')).resolves.toBe(`/sessions/${session1}`);
    // Edit the active one's statement (its row found by id: the text becomes an input).
    const redId = await red.getAttribute('data-memory');
    const redRow = list.locator(`li[data-memory="${redId}"]`);
    await redRow.getByRole('button', { name: 'Edit' }).click();
    await redRow.getByRole('textbox', { name: 'statement' }).fill('my team is called Red Kite');
    await redRow.getByRole('button', { name: 'Save' }).click();
    await list.getByText('my team is called Red Kite').waitFor();
    const edited = (await api.t.platform.memories.list(LOCAL_PRINCIPAL, { q: 'kite', limit: 5, cursor: null })).items;
    expect(edited.map((m) => [m.statement, m.updatedBy])).toEqual([['my team is called Red Kite', 'local-user']]);
    // Delete the superseded one, after confirming.
    await blue.getByRole('button', { name: 'Delete' }).click();
    await blue.getByRole('button', { name: 'Yes, forget' }).click();
    await list.locator('li[data-memory]', { hasText: 'Blue Falcon' }).waitFor({ state: 'detached' });
    const left = (await api.t.platform.memories.list(LOCAL_PRINCIPAL, { limit: 10, cursor: null })).items;
    expect(left.map((m) => m.statement)).toEqual(['my team is called Red Kite']);
  });
});
