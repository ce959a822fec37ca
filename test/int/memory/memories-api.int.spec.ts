import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addTokenToFile } from '../../../src/composition/http';
import type { MemoryCandidate } from '../../../src/domain/deciders/memory';
import type { Principal } from '../../../src/domain/principal';
import { memoryStreamIdOf } from '../../../src/domain/memory/memory-stream';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness, type WireBody } from '../api/api-harness';

/**
 * The memory API over a real database (issue 30): list and filters, detail with source events,
 * a user's edit recorded with the user as actor, supersession visible, bad input refused with
 * nothing changed, other principals and tenants answered 404, and a deletion that erases the
 * statement from every table (the database is grepped), after which the rebuild still verifies.
 */
let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-memory-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};
const alice: Principal = { tenantId: 'tenant-a', principalId: 'alice', roles: new Set(), scopes: new Set() };
const as = (who: string) => ({ authorization: `Bearer ${tokens[who]}` });

let sessionId: string;
let messageEventId: number;
/** The user message's key in its session's stream, which the memory keeps (ADR 0059). */
let messageSource: { id: number; sessionId: string; sequence: number };
let blue: string;

beforeAll(async () => {
  tokens.a = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['user'] }, []);
  tokens.a2 = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alan', scopes: ['user'] }, []);
  tokens.b = addTokenToFile(file, { tenantId: 'tenant-b', principalId: 'alice', scopes: ['user'] }, []);
  tokens.readOnly = addTokenToFile(
    file,
    { tenantId: 'tenant-a', principalId: 'alice', scopes: ['memory.read', 'sessions.read'] },
    [],
  );
  tdb = await createTestDb();
  h = await startApi(tdb.url, { authMode: 'token', authTokensFile: file });
  const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as('a') });
  sessionId = s.body.id;
  await call(h.base, 'POST', `/v1/sessions/${sessionId}/messages`, {
    body: { content: [{ type: 'text', text: 'Remember that my team is called Blue Falcon' }] },
    headers: as('a'),
  });
  const message = (
    await h.t.platform.db.query<{ id: string; sequence: string }>(
      `SELECT id, sequence FROM events WHERE session_id = $1 AND event_type = 'user.message.created'`,
      [sessionId],
    )
  ).rows[0];
  messageEventId = Number(message.id);
  messageSource = { id: messageEventId, sessionId, sequence: Number(message.sequence) };
  const r = await rememberForAlice('my team is called Blue Falcon');
  blue = r.memory.id;
}, 60_000);

afterAll(async () => {
  await h?.close();
  await tdb?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Alice's own words remembered by the worker, from her message in `sessionId` unless `over` says otherwise. */
function rememberForAlice(statement: string, over: Partial<MemoryCandidate> = {}) {
  return h.t.platform.memories.remember({
    principal: alice,
    actor: { actorType: 'worker' },
    candidate: {
      statement,
      scope: 'principal',
      agentId: 'general',
      sensitivity: 'personal',
      trust: 'user',
      attribution: null,
      sourceEvents: [messageSource],
      sourceSessionId: sessionId,
      sourceRunId: null,
      invocationId: null,
      ...over,
    },
  });
}

async function eventCount(): Promise<number> {
  return h.eventCount();
}

describe('GET /v1/memories', () => {
  it('lists the principal’s memories with their provenance', async () => {
    const r = await call(h.base, 'GET', '/v1/memories', { headers: as('a') });
    expect(r.status).toBe(200);
    expect(r.body.items).toHaveLength(1);
    expect(r.body.items[0]).toMatchObject({
      id: blue,
      subject: 'team',
      statement: 'my team is called Blue Falcon',
      scope: 'principal',
      status: 'active',
      confidence: 0.9,
      sensitivity: 'personal',
      trust: 'user',
      source_event_ids: [messageEventId],
      source_session_id: sessionId,
      flagged: false,
      revision: 1,
    });
    expect(r.body.next_cursor).toBeNull();
  });

  it('shows nothing of it to another principal of the tenant or to another tenant', async () => {
    for (const who of ['a2', 'b']) {
      const list = await call(h.base, 'GET', '/v1/memories', { headers: as(who) });
      expect(list.body.items).toEqual([]);
      const one = await call(h.base, 'GET', `/v1/memories/${blue}`, { headers: as(who) });
      expect(one.status).toBe(404);
      expect(one.body.error.code).toBe('not_found');
    }
  });

  it('filters by subject, scope, status and words', async () => {
    const ids = async (query: string) =>
      (await call(h.base, 'GET', `/v1/memories?${query}`, { headers: as('a') })).body.items.map((m: WireBody) => m.id);
    expect(await ids('subject=tea')).toEqual([blue]);
    expect(await ids('subject=dog')).toEqual([]);
    expect(await ids('scope=principal')).toEqual([blue]);
    expect(await ids('scope=tenant')).toEqual([]);
    expect(await ids('status=active')).toEqual([blue]);
    expect(await ids('status=superseded')).toEqual([]);
    expect(await ids('q=falcon')).toEqual([blue]);
    expect(await ids('q=giraffe')).toEqual([]);
    const bad = await call(h.base, 'GET', '/v1/memories?scope=galaxy', { headers: as('a') });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_error');
  });

  it('shows one memory with a link to the event it came from', async () => {
    const r = await call(h.base, 'GET', `/v1/memories/${blue}`, { headers: as('a') });
    expect(r.status).toBe(200);
    expect(r.body.source_events).toEqual([
      {
        id: messageEventId,
        session_id: sessionId,
        sequence: 3,
        type: 'user.message.created',
        run_id: expect.any(String),
      },
    ]);
    expect(r.body.used_by).toEqual([]);
  });

  it('keeps each source’s stream key and still finds sources recorded with ids alone (ADR 0059)', async () => {
    const row = await h.t.platform.db.query<{ source_events: unknown }>(
      'SELECT source_events FROM memory_records WHERE id = $1',
      [blue],
    );
    expect(row.rows[0].source_events).toEqual([[messageEventId, sessionId, messageSource.sequence]]);
    const keyed = (await call(h.base, 'GET', `/v1/memories/${blue}`, { headers: as('a') })).body.source_events;
    // A memory recorded before ADR 0059 has no keys (its v1 event upcasts to none): read by id instead.
    await h.t.platform.db.query(`UPDATE memory_records SET source_events = '[]' WHERE id = $1`, [blue]);
    try {
      const byId = (await call(h.base, 'GET', `/v1/memories/${blue}`, { headers: as('a') })).body.source_events;
      expect(byId).toEqual(keyed);
      expect(byId).toHaveLength(1);
    } finally {
      await h.t.platform.db.query(`UPDATE memory_records SET source_events = $2::jsonb WHERE id = $1`, [
        blue,
        JSON.stringify(row.rows[0].source_events),
      ]);
    }
  });

  it('needs memory.read, and memory.write to change anything', async () => {
    expect((await call(h.base, 'GET', '/v1/memories', { headers: as('readOnly') })).status).toBe(200);
    const patch = await call(h.base, 'PATCH', `/v1/memories/${blue}`, {
      body: { statement: 'my team is called Blue Hawk' },
      headers: as('readOnly'),
    });
    expect(patch.status).toBe(403);
  });
});

describe('PATCH /v1/memories/{id}', () => {
  it.each([
    ['an empty statement', { statement: '' }],
    ['a blank statement', { statement: '   ' }],
    ['a statement over 2,000 characters', { statement: 'x'.repeat(2001) }],
    ['an unknown sensitivity', { sensitivity: 'top-secret' }],
    ['an unknown field', { scope: 'tenant' }],
    ['a credential', { statement: 'the admin password is hunter2' }],
    ['nothing at all', {}],
  ])('refuses %s with a clear error and changes nothing', async (_what, body) => {
    const before = await eventCount();
    const r = await call(h.base, 'PATCH', `/v1/memories/${blue}`, { body, headers: as('a') });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('validation_error');
    expect(r.body.error.message.length).toBeGreaterThan(10);
    expect(await eventCount()).toBe(before);
    const now = await call(h.base, 'GET', `/v1/memories/${blue}`, { headers: as('a') });
    expect(now.body).toMatchObject({ statement: 'my team is called Blue Falcon', revision: 1 });
  });

  it('answers an edit of another principal’s memory with 404 and changes nothing', async () => {
    const before = await eventCount();
    for (const who of ['a2', 'b']) {
      const r = await call(h.base, 'PATCH', `/v1/memories/${blue}`, {
        body: { statement: 'my team is called Hijacked' },
        headers: as(who),
      });
      expect(r.status).toBe(404);
      const d = await call(h.base, 'DELETE', `/v1/memories/${blue}`, { headers: as(who) });
      expect(d.status).toBe(404);
    }
    expect(await eventCount()).toBe(before);
  });

  it('records a user’s edit as memory.updated with the user as actor', async () => {
    const r = await call(h.base, 'PATCH', `/v1/memories/${blue}`, {
      body: { statement: 'my team is called Blue Falcon', confidence: 1 },
      headers: as('a'),
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ revision: 2, confidence: 1, updated_by: 'alice', status: 'active' });
    const e = await h.t.platform.db.query(
      `SELECT actor_type, actor_id, payload FROM events WHERE session_id = $1 AND event_type = 'memory.updated'`,
      [memoryStreamIdOf('tenant-a', 'alice')],
    );
    expect(e.rows).toEqual([
      {
        actor_type: 'user',
        actor_id: 'alice',
        payload: {
          memoryId: blue,
          change: 'edited',
          trust: 'user',
          status: 'active',
          statement: 'my team is called Blue Falcon',
          confidence: 1,
        },
      },
    ]);
  });
});

describe('a contradicting statement, then DELETE /v1/memories/{id}', () => {
  let red: string;

  it('keeps both records: the older one superseded', async () => {
    const r = await rememberForAlice('my team is called Red Fox');
    expect(r.outcome).toBe('superseded');
    expect(r.superseded).toEqual([blue]);
    red = r.memory.id;
    const list = await call(h.base, 'GET', '/v1/memories', { headers: as('a') });
    // Both changed in one append (the same time): compare without their order.
    const rows = list.body.items.map((m: WireBody) => [m.statement, m.status, m.superseded_by]);
    expect(rows.sort()).toEqual([
      ['my team is called Blue Falcon', 'superseded', red],
      ['my team is called Red Fox', 'active', null],
    ]);
  });

  it('erases the statement from the projection and from every event and row that carried it', async () => {
    const d = await call(h.base, 'DELETE', `/v1/memories/${blue}`, { headers: as('a') });
    expect(d.status).toBe(204);
    expect((await call(h.base, 'GET', `/v1/memories/${blue}`, { headers: as('a') })).status).toBe(404);
    const deleted = await call(h.base, 'GET', '/v1/memories?status=deleted', { headers: as('a') });
    expect(deleted.body.items).toEqual([
      expect.objectContaining({ id: blue, status: 'deleted', subject: null, statement: null }),
    ]);
    // Grep every table of the schema for the statement.
    const tables = (
      await h.t.platform.db.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
      )
    ).rows.map((r) => r.table_name);
    expect(tables).toEqual(expect.arrayContaining(['events', 'memory_records', 'sessions']));
    for (const t of tables) {
      const hits = await h.t.platform.db.query(`SELECT 1 FROM "${t}" x WHERE x::text ILIKE '%Blue Falcon%'`);
      expect({ table: t, rows: hits.rowCount }).toEqual({ table: t, rows: 0 });
    }
    // The deletion event names only the id; the memory's own events keep no text.
    const own = await h.t.platform.db.query<{ event_type: string; payload: Record<string, unknown> }>(
      `SELECT event_type, payload FROM events WHERE payload->>'memoryId' = $1 ORDER BY id`,
      [blue],
    );
    expect(own.rows.map((r) => r.event_type)).toEqual([
      'memory.recorded',
      'memory.updated',
      'memory.superseded',
      'memory.deleted',
    ]);
    expect(own.rows[0].payload).toMatchObject({ subject: null, statement: null });
    expect(own.rows[3].payload).toEqual({ memoryId: blue });
    // The conversation still reads, with the statement replaced.
    const message = await h.t.platform.db.query<{ payload: { content: { text: string }[] } }>(
      `SELECT payload FROM events WHERE id = $1`,
      [messageEventId],
    );
    expect(message.rows[0].payload.content[0].text).toBe('Remember that [forgotten memory]');
    // The other memory is untouched.
    const kept = await call(h.base, 'GET', `/v1/memories/${red}`, { headers: as('a') });
    expect(kept.body.statement).toBe('my team is called Red Fox');
  });

  it('never returns a deleted memory from recall', async () => {
    const r = await h.t.platform.memories.recall({
      tenantId: 'tenant-a',
      principalId: 'alice',
      agentId: 'general',
      query: 'Blue Falcon team',
      limit: 10,
      includeTentative: true,
      requireMatch: false,
      nowIso: new Date().toISOString(),
    });
    expect(r.items.map((i) => i.record.id)).toEqual([red]);
  });

  it('leaves read models that a rebuild verifies', async () => {
    const report = await h.t.platform.rebuildProjections({ verify: true });
    for (const p of report.projections)
      expect({ name: p.name, differences: p.differences }).toEqual({ name: p.name, differences: [] });
    expect(report.projections.find((p) => p.name === 'memory_records')?.rows).toBe(2);
  });
});

describe('expiry', () => {
  it('never recalls a memory past expires_at, and the expiry job records memory.expired', async () => {
    const r = await rememberForAlice('my parking spot is B12', {
      expiresAt: new Date(Date.now() - 1000).toISOString(),
    });
    const now = new Date().toISOString();
    const found = await h.t.platform.memories.recall({
      tenantId: 'tenant-a',
      principalId: 'alice',
      agentId: 'general',
      query: 'parking spot',
      limit: 5,
      includeTentative: true,
      requireMatch: true,
      nowIso: now,
    });
    expect(found.items).toEqual([]);
    expect(await h.t.platform.memories.expireDue(now)).toBe(1);
    expect(await h.t.platform.memories.expireDue(now)).toBe(0);
    const m = await call(h.base, 'GET', `/v1/memories/${r.memory.id}`, { headers: as('a') });
    expect(m.body).toMatchObject({ status: 'expired', statement: 'my parking spot is B12', updated_by: null });
  });
});

describe('a memory with many sources (ADR 0059)', () => {
  it('reads more sources than one keyed statement holds, each once, in id order', async () => {
    // The tenant's events so far, from several sessions (the conversation and alice's memory stream).
    const events = (
      await h.t.platform.db.query<{ id: string; session_id: string; sequence: string; event_type: string }>(
        `SELECT id, session_id, sequence, event_type FROM events WHERE tenant_id = 'tenant-a' ORDER BY id LIMIT 9`,
      )
    ).rows;
    expect(events.length).toBeGreaterThan(4);
    expect(new Set(events.map((e) => e.session_id)).size).toBeGreaterThan(1);
    // Given out of order, as a reinforced memory's sources may be.
    const sources = events
      .map((e) => ({ id: Number(e.id), sessionId: e.session_id, sequence: Number(e.sequence) }))
      .reverse();
    const r = await rememberForAlice('my desk is by the window', { sourceEvents: sources });
    const detail = await call(h.base, 'GET', `/v1/memories/${r.memory.id}`, { headers: as('a') });
    expect(detail.body.source_events.map((e: { id: number; type: string }) => [e.id, e.type])).toEqual(
      events.map((e) => [Number(e.id), e.event_type]),
    );
  });
});
