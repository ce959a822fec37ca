import * as net from 'node:net';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import type { Worker } from '../../src/runtime/worker';
import { createTestPlatform, type TestPlatform } from '../support/platform';
import { ensureBuilt, startAgent, waitFor, type Proc } from '../support/processes';
import { createTestDb, type TestDb } from '../support/test-db';
import {
  settledDomSequences,
  ensureDashboardBuilt,
  describeWithChromium,
  launchBrowser,
  type Browser,
} from './browser-harness';

let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let browser: Browser;
let api: Proc | null = null;
let port = 0;

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
    s.on('error', reject);
  });

async function startApiProcess(): Promise<Proc> {
  const proc = startAgent(['api'], {
    DATABASE_URL: tdb.url,
    HOST: '127.0.0.1',
    PORT: String(port),
    AUTH_MODE: 'dev',
    SSE_HEARTBEAT_SECONDS: '1',
  });
  await waitFor(
    'the API process to be ready',
    async () => (await fetch(`http://127.0.0.1:${port}/health/ready`)).status === 200,
    // A process start (node, Nest, migrations checked) takes seconds on a loaded 2-core machine.
    60_000,
  );
  return proc;
}

beforeAll(async () => {
  ensureBuilt();
  ensureDashboardBuilt();
  tdb = await createTestDb();
  port = await freePort();
  // The worker lives in this process; only the API process is restarted.
  t = await createTestPlatform(tdb.url, { fakeModelLatencyMs: 1500, pollIntervalMs: 200 });
  worker = t.platform.createWorker({ concurrency: 2, pollIntervalMs: 200, drainMs: 2000 });
  await worker.start();
  api = await startApiProcess();
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  if (api && api.child.exitCode === null) {
    api.child.kill('SIGTERM');
    await api.exited;
  }
  await worker?.stop();
  await t?.close();
  await tdb?.drop();
});

describeWithChromium('dashboard across an API restart', () => {
  it('shows "reconnecting…" while the API is down, then finishes the run with every event exactly once', async () => {
    const base = `http://127.0.0.1:${port}`;
    const page = await browser.page();
    await page.goto(`${base}/`);
    await page.getByRole('button', { name: 'New session' }).click();
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
    const sessionId = page.url().split('/').pop()!;
    await page.locator('[data-conn="live"]').waitFor();
    await page.getByRole('textbox', { name: 'Message' }).fill('What is 17 multiplied by 23?');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    await page.locator('[data-type="model.request.started"]').first().waitFor();

    api!.child.kill('SIGKILL');
    await api!.exited;
    await page.locator('[data-conn="reconnecting"]').waitFor();
    await expect(page.locator('[data-conn]').textContent()).resolves.toBe('reconnecting…');
    // The run goes on without the API; its events are replayed after the restart.
    await new Promise((r) => setTimeout(r, 1500));
    api = await startApiProcess();

    await page.locator('[data-conn="live"]').waitFor({ timeout: 30_000 });
    await page.locator('article.run[data-status="completed"]').waitFor({ timeout: 30_000 });
    await page.locator('.bubble.assistant', { hasText: '391' }).waitFor();
    const log = (await t.platform.store.listAfter(sessionId, 0, LOCAL_PRINCIPAL)).map((e) => e.sequence);
    expect(await settledDomSequences(page, log)).toEqual(log);
  }, 150_000);
});
