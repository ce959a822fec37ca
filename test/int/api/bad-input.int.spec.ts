import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness, type WireBody } from './api-harness';
import { seedApproval } from './seed';

let tdb: TestDb;
let h: ApiHarness;
let sessionId: string;
let finishedRunId: string;

beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(tdb.url, { apiBodyLimitBytes: 4096 });
  sessionId = (await call(h.base, 'POST', '/v1/sessions', { body: {} })).body.id;
  finishedRunId = (
    await call(h.base, 'POST', `/v1/sessions/${sessionId}/messages`, {
      body: { content: [{ type: 'text', text: 'hi' }] },
    })
  ).body.run_id;
  expect((await call(h.base, 'POST', `/v1/runs/${finishedRunId}/cancel`)).status).toBe(200);
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
});

type Case = [
  name: string,
  status: number,
  code: string,
  send: () => Promise<{ status: number; headers: Headers; body: WireBody }>,
];

const cases: Case[] = [
  [
    'malformed JSON',
    400,
    'malformed_request',
    () =>
      call(h.base, 'POST', '/v1/sessions', { raw: '{"agent_id": ', headers: { 'content-type': 'application/json' } }),
  ],
  [
    'a wrong content type',
    415,
    'unsupported_media_type',
    () =>
      call(h.base, 'POST', '/v1/sessions', {
        raw: 'agent_id=general',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
  ],
  [
    'an oversize body',
    413,
    'payload_too_large',
    () =>
      call(h.base, 'POST', `/v1/sessions/${sessionId}/messages`, {
        body: { content: [{ type: 'text', text: 'x'.repeat(10_000) }] },
      }),
  ],
  [
    'an unknown field',
    400,
    'validation_error',
    () => call(h.base, 'POST', '/v1/sessions', { body: { agent_id: 'general', colour: 'blue' } }),
  ],
  [
    'an unknown nested field',
    400,
    'validation_error',
    () =>
      call(h.base, 'POST', `/v1/sessions/${sessionId}/messages`, {
        body: { content: [{ type: 'text', text: 'hi', bold: true }] },
      }),
  ],
  [
    'empty content',
    400,
    'validation_error',
    () => call(h.base, 'POST', `/v1/sessions/${sessionId}/messages`, { body: { content: [] } }),
  ],
  [
    'blank text',
    400,
    'validation_error',
    () =>
      call(h.base, 'POST', `/v1/sessions/${sessionId}/messages`, {
        body: { content: [{ type: 'text', text: '   ' }] },
      }),
  ],
  ['an invalid session UUID', 400, 'validation_error', () => call(h.base, 'GET', '/v1/sessions/not-a-uuid')],
  ['an invalid run UUID', 400, 'validation_error', () => call(h.base, 'POST', '/v1/runs/123/cancel')],
  ['an invalid approval UUID', 400, 'validation_error', () => call(h.base, 'GET', '/v1/approvals/xyz')],
  [
    'an invalid Last-Event-ID',
    400,
    'validation_error',
    () => call(h.base, 'GET', `/v1/sessions/${sessionId}/events`, { headers: { 'last-event-id': 'abc' } }),
  ],
  ['an invalid limit', 400, 'validation_error', () => call(h.base, 'GET', '/v1/sessions?limit=0')],
  ['an unknown query parameter', 400, 'validation_error', () => call(h.base, 'GET', '/v1/sessions?colour=blue')],
  [
    'an unknown agent',
    404,
    'not_found',
    () => call(h.base, 'POST', '/v1/sessions', { body: { agent_id: 'no-such-agent' } }),
  ],
  [
    'an unknown session',
    404,
    'not_found',
    () => call(h.base, 'GET', '/v1/sessions/00000000-0000-4000-8000-000000000000'),
  ],
  [
    'cancelling a finished run',
    409,
    'invalid_state_transition',
    () => call(h.base, 'POST', `/v1/runs/${finishedRunId}/cancel`),
  ],
  [
    'input for a run that is not waiting',
    409,
    'invalid_state_transition',
    () =>
      call(h.base, 'POST', `/v1/runs/${finishedRunId}/input`, { body: { content: [{ type: 'text', text: 'eu' }] } }),
  ],
  ['an unknown route', 404, 'not_found', () => call(h.base, 'GET', '/v1/nothing-here')],
];

describe('the bad-input catalog', () => {
  it.each(cases)(
    '%s is refused with %i and the error envelope, and nothing is written',
    async (_name, status, code, send) => {
      const before = await h.eventCount();
      const r = await send();
      expect(r.status).toBe(status);
      expect(r.body).toEqual({
        error: {
          code,
          message: expect.any(String),
          details: expect.any(Object),
          request_id: r.headers.get('x-request-id'),
        },
      });
      expect(JSON.stringify(r.body)).not.toMatch(/at .*\.(ts|js):\d+/);
      expect(await h.eventCount()).toBe(before);
    },
  );

  it('refuses to resolve an approval twice, and an unknown approval is 404', async () => {
    const run = await h.t.platform.runs.get(finishedRunId, null);
    const approvalId = await seedApproval(
      h.t.platform,
      { sessionId, runId: finishedRunId, tenantId: run!.tenantId, principalId: run!.principalId },
      true,
    );
    const before = await h.eventCount();
    const again = await call(h.base, 'POST', `/v1/approvals/${approvalId}/resolve`, {
      body: { decision: 'approve_once' },
    });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({
      code: 'invalid_state_transition',
      request_id: again.headers.get('x-request-id'),
    });
    const unknown = await call(h.base, 'POST', '/v1/approvals/00000000-0000-4000-8000-000000000000/resolve', {
      body: { decision: 'deny' },
    });
    expect(unknown.status).toBe(404);
    const badDecision = await call(h.base, 'POST', `/v1/approvals/${approvalId}/resolve`, {
      body: { decision: 'approve_forever' },
    });
    expect(badDecision.status).toBe(400);
    expect(await h.eventCount()).toBe(before);
    const listed = await call(h.base, 'GET', '/v1/approvals?status=resolved');
    expect(listed.body.items.map((a: { id: string }) => a.id)).toContain(approvalId);
    expect((await call(h.base, 'GET', '/v1/approvals?status=pending')).body.items).toEqual([]);
  });

  it('records a client X-Request-Id but always answers with its own', async () => {
    const r = await call(h.base, 'GET', '/v1/sessions/not-a-uuid', { headers: { 'x-request-id': 'client-chosen' } });
    expect(r.headers.get('x-request-id')).not.toBe('client-chosen');
    expect(r.body.error.request_id).toBe(r.headers.get('x-request-id'));
  });
});
