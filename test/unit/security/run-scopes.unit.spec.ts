import * as fs from 'node:fs';
import * as path from 'node:path';
import { runDecider } from '../../../src/domain/deciders/run';
import { EVENT_CATALOG } from '../../../src/domain/events/catalog';
import { upcast } from '../../../src/domain/events/upcasters';
import { runProjection } from '../../../src/domain/projections/run-projection';
import { toRunRecord } from '../../../src/domain/projections/run-record';
import { runPrincipal, ScopeSet } from '../../../src/domain/scopes';
import { LIMITS, RUN, USER } from '../deciders/fixtures';

describe('ScopeSet (ADR 0032)', () => {
  it('keeps names sorted and unique, and narrows a submitter to the agent’s allowed scopes', () => {
    expect(ScopeSet.of(['runs.read', 'tools.use', 'runs.read']).names).toEqual(['runs.read', 'tools.use']);
    const submitter = new Set(['sessions.write', 'tools.use', 'approvals.resolve']);
    expect(ScopeSet.forRun(submitter).names).toEqual(['approvals.resolve', 'sessions.write', 'tools.use']);
    expect(ScopeSet.forRun(submitter, ['tools.use', 'mcp.admin']).names).toEqual(['tools.use']);
    expect(ScopeSet.forRun(submitter, []).names).toEqual([]);
  });

  it('names what a tool requires and the set lacks', () => {
    const set = ScopeSet.of(['runs.read']);
    expect(set.missing(['tools.use', 'runs.read', 'files:write'])).toEqual(['tools.use', 'files:write']);
    expect(set.has('runs.read')).toBe(true);
    expect(set.isWithin(new Set(['runs.read', 'x']))).toBe(true);
    expect(ScopeSet.of(['a', 'b']).isWithin(ScopeSet.of(['a']))).toBe(false);
  });

  it('builds the principal a run executes as from its record alone: no roles, exactly its set', () => {
    const p = runPrincipal({ tenantId: 't', principalId: 'alice', scopes: ['runs.read'] });
    expect(p).toEqual({ tenantId: 't', principalId: 'alice', roles: new Set(), scopes: new Set(['runs.read']) });
  });
});

describe('run.queued v2 records the run’s scope set', () => {
  const queue = (scopes: string[]) =>
    runDecider.decide(
      {
        kind: 'QueueRun',
        runId: RUN,
        actor: USER,
        agentId: 'demo',
        agentVersion: 1,
        principalId: 'alice',
        modelPolicy: 'default',
        userMessageId: null,
        limits: LIMITS,
        priority: 100,
        idempotencyKey: null,
        requestHash: null,
        scopes,
      },
      runDecider.initialState(),
    );

  it('stores the set sorted and unique on the event', () => {
    const d = queue(['tools.use', 'runs.read', 'tools.use']);
    expect(d.kind === 'events' && d.events[0].data).toMatchObject({ scopes: ['runs.read', 'tools.use'] });
  });

  it('is required by the catalogue from version 2 on (v3 adds the session queue, ADR 0038)', () => {
    expect(EVENT_CATALOG['run.queued'].currentVersion).toBe(4);
    expect((EVENT_CATALOG['run.queued'].schema as { required: string[] }).required).toContain('scopes');
  });

  it('upcasts a frozen v1 payload to the local principal’s fixed set (what v1 runs ran with)', () => {
    const file = path.join(__dirname, '..', '..', 'fixtures', 'events', 'run.queued.v1.json');
    const fixture = JSON.parse(fs.readFileSync(file, 'utf8'));
    const r = upcast(1, fixture.event_type, fixture.payload_schema_version, fixture.payload);
    expect(r).toEqual({ version: 4, payload: fixture.expected_current });
  });

  it('projects the set into runs.scopes, and a row without one grants nothing', () => {
    const d = queue(['tools.use']);
    if (d.kind !== 'events') throw new Error('refused');
    const e = d.events[0];
    const row = runProjection.evolve(undefined, {
      ...e,
      id: 1,
      sessionId: 's',
      runId: RUN,
      sequence: 1,
      schemaVersion: 2,
      tenantId: 't',
      actorType: 'user',
      actorId: 'alice',
      traceId: null,
      createdAt: '2026-01-01T00:00:00.000Z',
    } as never);
    expect(row?.scopes).toEqual(['tools.use']);
    expect(toRunRecord({ ...row, scopes: null }).scopes).toEqual([]);
  });
});
