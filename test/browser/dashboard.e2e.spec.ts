import type { Page } from 'playwright-core';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { startTracing, type TracingHandle } from '../../src/adapters/telemetry/otel-tracing';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import { call, startApi, type ApiHarness } from '../int/api/api-harness';
import { createTestDb, type TestDb } from '../support/test-db';
import {
  settledDomSequences,
  ensureDashboardBuilt,
  describeWithChromium,
  launchBrowser,
  screenshot,
  type Browser,
} from './browser-harness';

let tdb: TestDb;
let h: ApiHarness;
let browser: Browser;
let manifest: ReturnType<typeof ensureDashboardBuilt>;

const TRACE_UI = 'http://localhost:16686/trace/{trace_id}';
let tracing: TracingHandle;

beforeAll(async () => {
  // Tracing on (in-memory) so the run detail links its trace id to the viewer (OTEL_TRACE_UI_URL).
  tracing = startTracing({ serviceName: 'dashboard-test', exporter: new InMemorySpanExporter() });
  process.env.OTEL_TRACE_UI_URL = TRACE_UI;
  manifest = ensureDashboardBuilt();
  tdb = await createTestDb();
  h = await startApi(tdb.url, { fakeModelLatencyMs: 150 }, { worker: true });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
  await tdb?.drop();
  await tracing?.shutdown();
  delete process.env.OTEL_TRACE_UI_URL;
});

async function sessionEventCount(sessionId: string): Promise<number[]> {
  return (await h.t.platform.store.listAfter(sessionId, 0, LOCAL_PRINCIPAL)).map((e) => e.sequence);
}

async function newSession(page: Page): Promise<string> {
  await page.goto(`${h.base}/`);
  await page.getByRole('button', { name: 'New session' }).click();
  await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
  await page.locator('[data-conn="live"]').waitFor();
  return page.url().split('/').pop()!;
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('textbox', { name: 'Message' }).press('Enter');
}

describeWithChromium('web dashboard in headless Chromium', () => {
  it('serves the dashboard at / and /console, gzip-compressed, small, with a strict CSP; the API is untouched', async () => {
    for (const p of ['/', '/console', `/sessions/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`]) {
      const r = await fetch(`${h.base}${p}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(r.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(await r.text()).toContain(`/assets/app.js?v=${manifest.version}`);
    }
    const js = await fetch(`${h.base}/assets/app.js`, { headers: { 'accept-encoding': 'gzip' } });
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const css = await fetch(`${h.base}/assets/app.css`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(manifest.total.gzip).toBeLessThan(300 * 1024);
    // Raw bytes on the wire: Node's fetch decodes gzip, so ask for it over http directly.
    const http = await import('node:http');
    const wire = await new Promise<{ enc: string | undefined; body: Buffer }>((resolve, reject) => {
      http
        .get(`${h.base}/assets/app.js`, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ enc: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
        })
        .on('error', reject);
    });
    expect(wire.enc).toBe('gzip');
    expect(gunzipSync(wire.body).toString()).toContain('/v1/sessions');
    expect((await call(h.base, 'GET', '/v1/sessions')).status).toBe(200);
    expect((await call(h.base, 'GET', '/nope')).status).toBe(404);
  });

  it('asks the calculator: the timeline shows math.calculate with its result and the answer 391 appears', async () => {
    const page = await browser.page();
    const sessionId = await newSession(page);
    await send(page, 'What is 17 multiplied by 23?');
    const run = page.locator('article.run').first();
    await run.locator('[data-type="tool.call.proposed"]', { hasText: 'math.calculate' }).waitFor();
    await run.locator('[data-type="tool.call.completed"]', { hasText: '391' }).waitFor();
    await run.locator('.bubble.assistant', { hasText: '391' }).waitFor();
    await page.locator('article.run[data-status="completed"]').waitFor();
    await run.locator('[data-type="tool.call.completed"] details summary').first().click();
    await expect(run.locator('[data-type="tool.call.completed"] pre').first().textContent()).resolves.toContain(
      '"391"',
    );
    const logged = await sessionEventCount(sessionId);
    expect(await settledDomSequences(page, logged)).toEqual(logged);
    await screenshot(page, 'session-run.png');

    // The run detail: every event with its sequence, usage by token class, cost and its source.
    await page
      .getByRole('link', { name: /details$/ })
      .first()
      .click();
    await page.waitForURL(/\/runs\//);
    await page.locator('[data-conn="ended"]').waitFor();
    const runId = page.url().split('/').pop()!;
    const runEvents = (await h.t.events(runId)).map((e) => e.sequence);
    await expect(settledDomSequences(page, runEvents, 'table.events')).resolves.toEqual(runEvents);
    await expect(page.locator('[data-cost]').textContent()).resolves.toMatch(/\(.+\)/);
    expect(Number(await page.locator('[data-usage="output_tokens"]').textContent())).toBeGreaterThan(0);
    await expect(page.getByRole('table', { name: 'counts and limits' }).textContent()).resolves.toMatch(
      /model calls2 \/ 20/,
    );
    // The run's trace id, linked to the trace viewer.
    const started = (await h.t.events(runId)).find((e) => e.type === 'run.started')!;
    const traceId = (started.data as { traceId: string }).traceId;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    await expect(page.locator('[data-trace]').getAttribute('data-trace')).resolves.toBe(traceId);
    await expect(page.locator('[data-trace] a').getAttribute('href')).resolves.toBe(
      TRACE_UI.replace('{trace_id}', traceId),
    );
    await screenshot(page, 'run-detail.png');
  });

  it('refuses an empty message in the form with the API reason, and sends the Idempotency-Key', async () => {
    const page = await browser.page();
    const sessionId = await newSession(page);
    await page.getByRole('textbox', { name: 'Message' }).fill('   ');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/text must not be empty/);
    expect(await h.runCount()).toBeGreaterThan(0);
    const keys: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith('/messages')) keys.push(r.headers()['idempotency-key']);
    });
    await send(page, 'hello there');
    await page.locator('article.run[data-status="completed"]').waitFor();
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    const logged = await sessionEventCount(sessionId);
    expect(await settledDomSequences(page, logged)).toEqual(logged);
  });

  it('retries a submission the network lost with the same Idempotency-Key: one run only', async () => {
    const page = await browser.page();
    const sessionId = await newSession(page);
    const keys: string[] = [];
    let dropped = 0;
    await page.route('**/v1/sessions/*/messages', async (route) => {
      keys.push(route.request().headers()['idempotency-key']);
      if (dropped++ === 0) {
        // The server gets it, the answer is lost.
        await route.fetch();
        await route.abort('connectionreset');
      } else await route.continue();
    });
    await send(page, 'What is 6 times 7?');
    await page.locator('article.run[data-status="completed"]').waitFor();
    expect(keys.length).toBe(2);
    expect(new Set(keys).size).toBe(1);
    const runs = await h.t.platform.db.query('SELECT count(*)::int AS n FROM runs WHERE session_id = $1', [sessionId]);
    expect(runs.rows[0].n).toBe(1);
    await page.unroute('**/v1/sessions/*/messages');
  });

  it('shows a new approval in the console live; approve completes the run, deny ends with "not done"', async () => {
    const chat = await browser.page();
    const consolePage = await browser.ctx.newPage();
    await consolePage.setViewportSize({ width: 1280, height: 900 });
    await consolePage.goto(`${h.base}/console`);
    await consolePage.getByText('Nothing is waiting for a decision.').waitFor();
    const sessionId = await newSession(chat);
    await send(chat, 'send hello to the newsletter');
    const card = consolePage.locator('li.approval').first();
    await card.waitFor();
    await expect(card.textContent()).resolves.toContain('demo.external_write');
    await expect(card.locator('pre').textContent()).resolves.toContain('newsletter');
    await expect(card.locator('[data-countdown]').textContent()).resolves.toMatch(/left|no expiry/);
    await chat.locator('article.run[data-status="waiting_for_approval"]').waitFor();
    // While the run waits, the composer stays enabled with a strategy picker, enqueue by default (issue 33).
    await expect(chat.getByRole('button', { name: 'Send' }).isEnabled()).resolves.toBe(true);
    await expect(chat.getByRole('combobox', { name: 'While the agent works' }).inputValue()).resolves.toBe('enqueue');
    await expect(chat.locator('[data-composer-wait]').textContent()).resolves.toMatch(/waits for an approval/);

    // Deleting the session now is refused, with the API's reason in words.
    const list = await browser.ctx.newPage();
    await list.goto(`${h.base}/`);
    const row = list.locator(`li[data-session="${sessionId}"]`);
    await row.getByRole('button', { name: /^Delete/ }).click();
    await row.getByRole('button', { name: 'Yes, delete' }).click();
    await expect(row.getByRole('alert').textContent()).resolves.toMatch(/^Not deleted: .+/);
    // The metrics panel: runs by status, model latency, tokens by class, tool failures.
    await list.locator('[data-runs="completed"]').waitFor();
    expect(Number(await list.locator('[data-runs="completed"]').textContent())).toBeGreaterThan(0);
    await list.locator('[data-model="demo:demo"]').waitFor();
    expect(Number(await list.locator('[data-tokens="output"]').textContent())).toBeGreaterThan(0);
    await list.locator('[data-tool="math.calculate"]').waitFor();
    await screenshot(list, 'sessions.png');
    await list.close();

    await screenshot(consolePage, 'console.png');
    await card.getByRole('button', { name: 'Approve' }).click();
    await chat.locator('article.run[data-status="completed"]').waitFor();
    await chat.locator('.bubble.assistant', { hasText: 'Sent to' }).waitFor();
    // Nothing works any more: no picker, a plain send.
    await chat.getByRole('combobox', { name: 'While the agent works' }).waitFor({ state: 'detached' });
    await consolePage.locator('tr[data-resolved]', { hasText: 'approved' }).waitFor();

    await send(chat, 'send goodbye to the newsletter');
    const second = consolePage.locator('li.approval').first();
    await second.waitFor();
    await second.getByRole('button', { name: 'Deny' }).click();
    await expect(second.getByRole('alert').textContent()).resolves.toMatch(/reason/i);
    await second.getByRole('textbox', { name: 'Reason' }).fill('not today');
    await second.getByRole('button', { name: 'Deny' }).click();
    await consolePage.locator('tr[data-resolved]', { hasText: 'not today' }).waitFor();
    const last = chat.locator('article.run').nth(1);
    // The stored answer (data-seq), not the streaming bubble, which may still hold part of it.
    const answer = last.locator('.bubble.assistant[data-seq]');
    await answer.waitFor();
    await expect(answer.textContent()).resolves.toMatch(/not|nothing/i);
    await last.locator('[data-type="approval.resolved"]', { hasText: 'not today' }).waitFor();
    const logged = await sessionEventCount(sessionId);
    expect(await settledDomSequences(chat, logged)).toEqual(logged);
    await consolePage.getByText('Nothing is waiting for a decision.').waitFor();
    await consolePage.close();
  });

  it('lists a run’s artifacts with size and SHA-256 and downloads one with the same SHA-256', async () => {
    const page = await browser.page();
    const sessionId = await newSession(page);
    await send(page, 'write the artifact body to out/report.md');
    // The answer streams in (a bubble with the text) before the run ends; the next message is only
    // accepted once it has (one active run per session), so wait for the run, not the text.
    const runs = page.locator('article.run');
    await runs.nth(0).and(page.locator('[data-status="completed"]')).waitFor();
    await expect(runs.nth(0).locator('.bubble.assistant').textContent()).resolves.toContain('Wrote');
    await send(page, 'export out/report.md');
    await runs.nth(1).and(page.locator('[data-status="completed"]')).waitFor();
    await expect(runs.nth(1).locator('.bubble.assistant').textContent()).resolves.toContain('Exported');
    const runId = (await call(h.base, 'GET', `/v1/sessions/${sessionId}`)).body.last_run_id as string;
    const sha = createHash('sha256').update('the artifact body').digest('hex');
    await page.goto(`${h.base}/runs/${runId}`);
    const row = page.getByRole('table', { name: 'artifacts' }).locator('tbody tr');
    await row.first().waitFor();
    expect(await row.count()).toBe(1);
    await expect(row.locator('td').nth(0).textContent()).resolves.toContain('report.md');
    await expect(row.locator('[data-size]').getAttribute('data-size')).resolves.toBe('17');
    await expect(row.locator('[data-sha256]').textContent()).resolves.toBe(sha);
    const [file] = await Promise.all([
      page.waitForEvent('download'),
      row.getByRole('link', { name: 'Download' }).click(),
    ]);
    expect(file.suggestedFilename()).toBe('report.md');
    const saved = await file.path();
    expect(createHash('sha256').update(readFileSync(saved)).digest('hex')).toBe(sha);
    await row.locator('[data-download-status]', { hasText: 'SHA-256 verified' }).waitFor();
    await screenshot(page, 'run-artifacts.png');
  });

  it('works at phone width', async () => {
    const page = await browser.page(390, 800);
    await page.goto(`${h.base}/`);
    await page.locator('li.session-row').first().waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.locator('li.session-row a.title').first().click();
    await page.locator('article.run').first().waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
    await screenshot(page, 'session-phone.png');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('renders a session of 500+ events quickly', async () => {
    const page = await browser.page();
    const sessionId = (await call(h.base, 'POST', '/v1/sessions', { body: { title: 'long session' } })).body.id;
    let total = 0;
    for (let i = 0; total < 500; i++) {
      const { runId } = await h.t.submit(`What is ${i} times 3?`, {}, sessionId);
      await h.t.waitForTerminal(runId);
      total = (await sessionEventCount(sessionId)).length;
    }
    const t0 = Date.now();
    await page.goto(`${h.base}/sessions/${sessionId}`);
    await page.waitForFunction((n) => document.querySelectorAll('main [data-seq]').length === n, total, {
      timeout: 20_000,
    });
    const ms = Date.now() - t0;
    process.stdout.write(`dashboard: rendered a session of ${total} events in ${ms} ms (navigation to last entry)\n`);
    const logged = await sessionEventCount(sessionId);
    expect(await settledDomSequences(page, logged)).toEqual(logged);
    expect(ms).toBeLessThan(5000);
  }, 120_000);
});
