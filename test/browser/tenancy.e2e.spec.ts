import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addTokenToFile } from '../../src/composition/http';
import { call, startApi, type ApiHarness } from '../int/api/api-harness';
import { seedApproval } from '../int/api/seed';
import { createTestDb, type TestDb } from '../support/test-db';
import { ensureDashboardBuilt, describeWithChromium, launchBrowser, type Browser } from './browser-harness';

let tdb: TestDb;
let h: ApiHarness;
let browser: Browser;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-tokens-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};

beforeAll(async () => {
  ensureDashboardBuilt();
  tokens.a = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['user'] }, []);
  tokens.b = addTokenToFile(file, { tenantId: 'tenant-b', principalId: 'bob', scopes: ['user'] }, []);
  tdb = await createTestDb();
  h = await startApi(tdb.url, { authMode: 'token', authTokensFile: file });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
  await tdb?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describeWithChromium('dashboard in token mode', () => {
  it("asks for a token, keeps it for the tab only, and shows none of another tenant's sessions or approvals", async () => {
    const as = { authorization: `Bearer ${tokens.a}` };
    const s = await call(h.base, 'POST', '/v1/sessions', { body: { title: 'alice secret plans' }, headers: as });
    const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: { content: [{ type: 'text', text: 'What is 2 plus 2?' }] },
      headers: as,
    });
    await seedApproval(
      h.t.platform,
      { sessionId: s.body.id, runId: m.body.run_id, tenantId: 'tenant-a', principalId: 'alice' },
      false,
    );

    const page = await browser.page();
    await page.goto(`${h.base}/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByLabel('Token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();

    // Tenant A sees its own session and approval.
    await page.getByLabel('Token').fill(tokens.a);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('alice secret plans').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('agent-core.token'))).toBe(tokens.a);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.locator('li.approval').first().waitFor();

    // Tenant B: nothing of A's, and A's session page is "not found".
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').fill(tokens.b);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Nothing is waiting for a decision.').waitFor();
    await expect(page.locator('li.approval').count()).resolves.toBe(0);
    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByText('No sessions yet.').waitFor();
    await expect(page.getByText('alice secret plans').count()).resolves.toBe(0);
    await page.goto(`${h.base}/sessions/${s.body.id}`);
    await expect(page.getByRole('alert').first().textContent()).resolves.toMatch(/not found/i);
    await expect(page.locator('[data-seq]').count()).resolves.toBe(0);
  });
});
