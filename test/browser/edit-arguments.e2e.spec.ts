import { createTestDb, type TestDb } from '../support/test-db';
import { call, startApi, type ApiHarness } from '../int/api/api-harness';
import { ensureDashboardBuilt, describeWithChromium, launchBrowser, screenshot, type Browser } from './browser-harness';

// The approval console's "Edit arguments" form (issue 33, ADR 0044): the proposed arguments as
// JSON, checked against the tool's schema as the human types (the failing field named, the
// button disabled); the server's own refusal (a hardline rule) shown on the card, which stays;
// "Approve with edits" runs the tool with the edited text.
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

describeWithChromium('approval console: Edit arguments', () => {
  it('validates against the tool schema as typed, shows a server refusal, and approves with the edited arguments', async () => {
    const s = await call(api.base, 'POST', '/v1/sessions', { body: {} });
    const m = await call(api.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: { content: [{ type: 'text', text: 'send hello to the newsletter' }] },
    });
    const runId: string = m.body.run_id;
    const page = await browser.page();
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${api.base}/console`);
    const card = page.locator('li.approval').first();
    await card.waitFor();
    await card.getByRole('button', { name: 'Edit arguments' }).click();
    const form = card.locator('[data-edit-form]');
    const editor = form.getByRole('textbox');
    expect(JSON.parse(await editor.inputValue())).toEqual({ target: 'the newsletter', text: 'hello' });
    const submit = form.getByRole('button', { name: 'Approve with edits' });

    await editor.fill('{"text": "", "target": "the newsletter"}');
    await expect(form.locator('[data-edit-issues]').textContent()).resolves.toContain('arguments.text');
    await expect(submit.isDisabled()).resolves.toBe(true);
    await editor.fill('{"text": "hi", "target": "the newsletter", "cc": "everyone"}');
    await expect(form.locator('[data-edit-issues]').textContent()).resolves.toContain(
      'arguments.cc is not an allowed property',
    );
    await editor.fill('{"text": "hi", ');
    await expect(form.locator('[data-edit-issues]').textContent()).resolves.toContain('is not valid JSON');

    // Valid for the schema, refused by policy: the server's answer is shown and the card stays pending.
    await editor.fill('{"text": "drop database production", "target": "the newsletter"}');
    await expect(submit.isEnabled()).resolves.toBe(true);
    await submit.click();
    await expect(card.getByRole('alert').textContent()).resolves.toMatch(/denied by policy/);
    const still = await call(api.base, 'GET', '/v1/approvals?status=pending');
    expect(still.body.items).toHaveLength(1);

    await editor.fill(JSON.stringify({ text: 'hello, world', target: 'the newsletter' }, null, 2));
    await expect(form.locator('[data-edit-issues]').count()).resolves.toBe(0);
    await screenshot(page, 'console-edit-arguments.png');
    await submit.click();
    await page.locator('tr[data-resolved]', { hasText: 'approved with edits' }).waitFor();
    expect(await api.t.waitForTerminal(runId, 30_000)).toBe('completed');
    const writes = await api.t.platform.db.query('SELECT content FROM demo_external_writes WHERE run_id = $1', [runId]);
    expect(writes.rows).toEqual([{ content: 'hello, world' }]);
    await page.getByText('Nothing is waiting for a decision.').waitFor();
  });

  it('the session composer stays enabled while a run waits, and queues the message behind it (enqueue by default)', async () => {
    const page = await browser.page();
    await page.goto(`${api.base}/`);
    await page.getByRole('button', { name: 'New session' }).click();
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
    await page.locator('[data-conn="live"]').waitFor();
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('send hello to the newsletter');
    await box.press('Enter');
    await page.locator('article.run[data-status="waiting_for_approval"]').waitFor();
    const picker = page.getByRole('combobox', { name: 'While the agent works' });
    await expect(picker.inputValue()).resolves.toBe('enqueue');
    await expect(page.getByRole('button', { name: 'Send' }).isEnabled()).resolves.toBe(true);
    await box.fill('What is 6 times 7?');
    await box.press('Enter');
    await page.locator('article.run').nth(1).waitFor();
    const sessionId = page.url().split('/').pop()!;
    const runs = await api.t.platform.db.query<{ id: string; status: string; queued_behind: string | null }>(
      'SELECT id, status, queued_behind FROM runs WHERE session_id = $1 ORDER BY created_at',
      [sessionId],
    );
    expect(runs.rows.map((r) => r.status)).toEqual(['waiting_for_approval', 'queued']);
    expect(runs.rows[1].queued_behind).toBe(runs.rows[0].id);
    const pending = await call(api.base, 'GET', '/v1/approvals?status=pending');
    const approval = (pending.body.items as { id: string; run_id: string }[]).find(
      (a) => a.run_id === runs.rows[0].id,
    )!;
    const r = await call(api.base, 'POST', `/v1/approvals/${approval.id}/resolve`, {
      body: { decision: 'approve_with_edits', arguments: { text: 'hello again', target: 'the newsletter' } },
    });
    expect(r.status).toBe(200);
    expect(await api.t.waitForTerminal(runs.rows[0].id, 30_000)).toBe('completed');
    expect(await api.t.waitForTerminal(runs.rows[1].id, 30_000)).toBe('completed');
    // The dashboard learns of the second run's end over SSE, a moment after the database does.
    await page.locator('article.run[data-status="completed"]').nth(1).waitFor();
    await page.getByRole('combobox', { name: 'While the agent works' }).waitFor({ state: 'detached' });
  });
});
