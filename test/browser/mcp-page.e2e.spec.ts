import { createTestDb, type TestDb } from '../support/test-db';
import { createTestPlatform, type TestPlatform } from '../support/platform';
import { startApi, type ApiHarness } from '../int/api/api-harness';
import { EVERYTHING, EVERYTHING_STDIO_MCP_YAML, MCP_AGENT, makeConfigDir } from '../int/mcp/mcp-support';
import { ensureDashboardBuilt, describeWithChromium, launchBrowser, type Browser } from './browser-harness';

// The dashboard's MCP page restarts a server and says what every other process did with the
// action (ADR 0021): here a second platform on the same database stands for the worker process.
const MCP_YAML = EVERYTHING_STDIO_MCP_YAML;

let tdb: TestDb;
let api: ApiHarness;
let other: TestPlatform;
let browser: Browser;
let config: { dir: string; remove(): void };

beforeAll(async () => {
  ensureDashboardBuilt();
  config = makeConfigDir(MCP_YAML, { 'mcp_demo.yaml': MCP_AGENT });
  tdb = await createTestDb();
  api = await startApi(tdb.url, { configDir: config.dir, defaultAgentId: 'mcp_demo' });
  other = await createTestPlatform(tdb.url, { configDir: config.dir, defaultAgentId: 'mcp_demo' });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await other?.close();
  await api?.close();
  await tdb?.drop();
  config?.remove();
});

describeWithChromium('dashboard MCP page', () => {
  it('restarts a server and reports the other process restarting it too', async () => {
    const before = other.platform.mcp.pidOf('everything');
    const page = await browser.page();
    await page.goto(`${api.base}/mcp`);
    await page.getByRole('table', { name: 'MCP servers' }).getByText('everything').waitFor();
    await page.getByRole('button', { name: 'Restart' }).click();
    const status = page.getByRole('status');
    await status.getByText('everything restarted: ready in the API').waitFor();
    await expect(status.textContent()).resolves.toContain(`test pid ${process.pid}: ready`);
    expect(other.platform.mcp.pidOf('everything')).not.toBe(before);
  });

  it('adds a server from the editor, edits its settings and deletes it, in both processes (ADR 0052)', async () => {
    const page = await browser.page();
    await page.goto(`${api.base}/mcp`);
    await page.getByRole('button', { name: 'Add server' }).click();
    const entry = {
      id: 'added',
      transport: { type: 'stdio', command: '${node}', args: [EVERYTHING, 'stdio'] },
      classification: { side_effect: 'read', risk: 'low', idempotency: 'read_only' },
    };
    const editor = page.getByRole('textbox', { name: 'server entry (JSON)' });
    // A refused entry shows the API's message naming the field; nothing is added.
    await editor.fill(JSON.stringify({ ...entry, transport: { type: 'stdio', command: 'node x.js | tee' } }));
    await page.getByRole('button', { name: 'Add server' }).click();
    await page
      .getByRole('alert')
      .getByText(/transport\.command/)
      .waitFor();
    await editor.fill(JSON.stringify(entry));
    await page.getByRole('button', { name: 'Add server' }).click();
    await page.getByRole('status').getByText('added added: ready in the API').waitFor();
    expect(other.platform.mcp.status().find((s) => s.id === 'added')?.state).toBe('ready');
    const row = page.locator('tr[data-server="added"]');
    await row.waitFor();

    await row.getByRole('button', { name: 'Edit' }).click();
    await editor.waitFor();
    await editor.fill(JSON.stringify({ ...entry, health_interval_seconds: 9 }));
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').getByText('added changed: ready in the API').waitFor();
    expect(other.platform.mcp.configOf('added')?.healthIntervalMs).toBe(9000);

    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('status').getByText('added deleted: removed in the API').waitFor();
    await row.waitFor({ state: 'detached' });
    expect(other.platform.mcp.has('added')).toBe(false);
  });
});
