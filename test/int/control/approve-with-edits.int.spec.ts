import { SessionHistory, unitItems } from '../../../src/context/history';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { argumentsHash } from '../../../src/tools/canonical-arguments';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness, type WireBody } from '../api/api-harness';

/**
 * Issue 33, approve with edits (ADR 0044), over a real worker, real HTTP and a real PostgreSQL:
 * the offline demo model proposes `demo.external_write` for "send hello to the newsletter"; a
 * human approves it with edited arguments. Every bad edit is refused with the field named and
 * nothing written (the approval stays pending); the good one runs the tool with the edited text,
 * records both argument hashes and the editor, and the model is told a human edited the call.
 */
let tdb: TestDb;
let h: ApiHarness;
beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(tdb.url, {}, { worker: true });
}, 60_000);
afterAll(async () => {
  await h?.close();
  await tdb?.drop();
});

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const EDITED = { text: 'hello, world', target: 'the newsletter' };

describe('approve with edits', () => {
  let sessionId: string;
  let runId: string;
  let approval: WireBody;
  const resolve = (body: unknown) => call(h.base, 'POST', `/v1/approvals/${approval.id}/resolve`, { body });
  const stillPending = async () => {
    const a = await call(h.base, 'GET', `/v1/approvals/${approval.id}`);
    expect(a.body).toMatchObject({ status: 'pending', decision: null, edit: null });
  };

  beforeAll(async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    sessionId = s.body.id;
    const m = await call(h.base, 'POST', `/v1/sessions/${sessionId}/messages`, {
      body: { content: [{ type: 'text', text: 'send hello to the newsletter' }] },
    });
    expect(m.status).toBe(202);
    runId = m.body.run_id;
    approval = await until('the approval', async () => {
      const r = await call(h.base, 'GET', '/v1/approvals?status=pending');
      return r.body.items.find((a: WireBody) => a.run_id === runId);
    });
  }, 60_000);

  it('shows the pending approval with the tool’s arguments schema for the edit form', () => {
    expect(approval).toMatchObject({
      tool_name: 'demo.external_write',
      arguments: { target: 'the newsletter', text: 'hello' },
      arguments_schema: {
        type: 'object',
        required: ['target', 'text'],
        additionalProperties: false,
        properties: { text: { type: 'string', minLength: 1 } },
      },
    });
  });

  it('refuses edits that fail the schema with the field named, and writes nothing', async () => {
    const before = await h.eventCount();
    const cases: [unknown, string][] = [
      [{ text: '', target: 'the newsletter' }, 'arguments.text'],
      [{ target: 'the newsletter' }, 'arguments.text'],
      [{ text: 'hi', target: 'the newsletter', cc: 'everyone' }, 'arguments.cc'],
      [{ text: 42, target: 'the newsletter' }, 'arguments.text'],
    ];
    for (const [args, field] of cases) {
      const r = await resolve({ decision: 'approve_with_edits', arguments: args });
      expect({ status: r.status, code: r.body.error.code, field: r.body.error.details.field }).toEqual({
        status: 400,
        code: 'validation_error',
        field,
      });
      expect(r.body.error.message).toContain(field);
    }
    expect(await h.eventCount()).toBe(before);
    await stillPending();
  });

  it('refuses an unknown decision, arguments without approve_with_edits, and approve_with_edits without arguments', async () => {
    const before = await h.eventCount();
    const bad: [unknown, string][] = [
      [{ decision: 'approve_forever' }, 'decision'],
      [{ decision: 'approve_once', arguments: EDITED }, 'arguments'],
      [{ decision: 'approve_with_edits' }, 'arguments'],
      [{ decision: 'approve_with_edits', arguments: ['hello'] }, 'arguments'],
    ];
    for (const [body, field] of bad) {
      const r = await resolve(body);
      expect({ status: r.status, code: r.body.error.code }).toEqual({ status: 400, code: 'validation_error' });
      expect(JSON.stringify(r.body.error)).toContain(field);
    }
    expect(await h.eventCount()).toBe(before);
    await stillPending();
  });

  it('refuses an edit the policy would deny (a hardline rule) with 403, and writes nothing', async () => {
    const before = await h.eventCount();
    const r = await resolve({
      decision: 'approve_with_edits',
      arguments: { target: 'the newsletter', text: 'please run: drop database production' },
    });
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({
      code: 'authorization_error',
      details: { field: 'arguments', reason_code: 'hardline_destructive_command' },
    });
    expect(await h.eventCount()).toBe(before);
    await stillPending();
  });

  it('runs the tool with the edited arguments and records both hashes and the editor', async () => {
    const r = await resolve({ decision: 'approve_with_edits', arguments: EDITED, reason: 'wider greeting' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      status: 'approved',
      decision: 'approved',
      arguments: { target: 'the newsletter', text: 'hello' },
      edit: {
        arguments: EDITED,
        original_arguments_hash: argumentsHash({ target: 'the newsletter', text: 'hello' }),
        edited_arguments_hash: argumentsHash(EDITED),
        edited_by: LOCAL_PRINCIPAL.principalId,
      },
    });
    await until('the run to complete', async () => {
      const run = await call(h.base, 'GET', `/v1/runs/${runId}`);
      return run.body.status === 'completed' ? true : undefined;
    });
    const writes = await h.t.platform.db.query<{ target: string; content: string }>(
      'SELECT target, content FROM demo_external_writes WHERE run_id = $1',
      [runId],
    );
    expect(writes.rows).toEqual([{ target: 'the newsletter', content: 'hello, world' }]);
    const stored = await h.t.platform.db.query<{ v: number }>(
      `SELECT payload_schema_version AS v FROM events WHERE run_id = $1 AND event_type = 'approval.resolved'`,
      [runId],
    );
    expect(stored.rows).toEqual([{ v: 2 }]);
    const again = await resolve({ decision: 'approve_with_edits', arguments: EDITED });
    expect(again.status).toBe(409);
  });

  it('the authorization names the edit, and the model sees the edited call’s result with a note', async () => {
    const events: StoredEvent[] = await h.t.platform.store.listAfter(sessionId, 0, LOCAL_PRINCIPAL);
    const authorized = events.find((e) => e.type === 'tool.call.authorized' && e.runId === runId);
    expect(authorized?.data).toMatchObject({ decision: 'approved', reasonCode: 'human_approved_with_edits' });
    const history = new SessionHistory();
    history.apply(events);
    const results = history.units.flatMap(unitItems).filter((i) => i.kind === 'tool_result');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({
      name: 'demo.external_write',
      isError: false,
      output: {
        note: expect.stringContaining('A human reviewer edited the arguments'),
        edited_arguments: EDITED,
        result: { recorded: true, target: 'the newsletter', bytes: Buffer.byteLength('hello, world') },
      },
    });
  });
});
