import { createTestDb, type TestDb } from '../support/test-db';
import { createTestPlatform, type TestPlatform } from '../support/platform';
import { startApi, type ApiHarness } from '../int/api/api-harness';
import { EVERYTHING_STDIO_MCP_YAML, MCP_AGENT, makeConfigDir } from '../int/mcp/mcp-support';
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
});
