import * as fs from 'node:fs';
import * as path from 'node:path';
import { EVENT_CATALOG } from '../../../src/domain/events/catalog';
import type { EventPayloads, StoredEvent } from '../../../src/domain/events/payloads';
import { upcast } from '../../../src/domain/events/upcasters';
import { encodeEvent } from '../../../src/adapters/postgres/event-codec';
import { runLifecycle, sessionCreated } from '../../../bench/support/run-lifecycle';
import Ajv from 'ajv';
import { modelCallProjection } from '../../../src/domain/projections/model-call-projection';

/** model.request.started v2: the provider profile and registry that routed each model call. */

const validate = new Ajv({ allErrors: true, strict: false }).compile(EVENT_CATALOG['model.request.started'].schema);
const validatePayload = (_type: string, p: unknown) => (validate(p) ? null : validate.errors);

const fixture = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', '..', 'fixtures', 'events', 'model.request.started.v1.json'), 'utf8'),
) as { event_type: string; payload_schema_version: number; payload: object; expected_current: object };

function started(data: EventPayloads['model.request.started']): StoredEvent<'model.request.started'> {
  return {
    id: 1,
    sessionId: 's',
    runId: 'r',
    sequence: 1,
    type: 'model.request.started',
    schemaVersion: 4,
    data,
    actorType: 'worker',
    actorId: null,
    tenantId: 't',
    traceId: null,
    createdAt: '2025-10-15T00:00:00.000Z',
  };
}

describe('model.request.started v2', () => {
  it('is superseded by v3 (the context build record, issue #11), then v4 (fallback models, ADR 0046)', () => {
    expect(EVENT_CATALOG['model.request.started'].currentVersion).toBe(4);
  });

  it('upcasts the frozen v2 fixture with a null context record', () => {
    const v2 = JSON.parse(
      fs.readFileSync(path.join(__dirname, '..', '..', 'fixtures', 'events', 'model.request.started.v2.json'), 'utf8'),
    ) as typeof fixture;
    const r = upcast(1, v2.event_type, v2.payload_schema_version, v2.payload);
    expect(r).toEqual({ version: 4, payload: v2.expected_current });
    expect(validatePayload('model.request.started', r.payload)).toBeNull();
  });

  it('upcasts the frozen v1 fixture with null profile and registry versions', () => {
    const r = upcast(1, fixture.event_type, fixture.payload_schema_version, fixture.payload);
    expect(r.version).toBe(4);
    expect(r.payload).toEqual(fixture.expected_current);
    expect(validatePayload('model.request.started', r.payload)).toBeNull();
  });

  it('refuses a v2 payload without the new fields', () => {
    expect(validatePayload('model.request.started', fixture.payload)).not.toBeNull();
  });

  it('projects profile name, profile version and registry version into model_calls (projection v2)', () => {
    expect(modelCallProjection.version).toBe(2);
    expect(modelCallProjection.columns).toEqual(
      expect.arrayContaining(['profile_name', 'profile_version', 'registry_version']),
    );
    const base = fixture.expected_current as EventPayloads['model.request.started'];
    const row = modelCallProjection.evolve(
      undefined,
      started({ ...base, profileName: 'openai', profileVersion: 7, registryVersion: 'r1-0123456789ab' }),
    );
    expect(row).toMatchObject({ profile_name: 'openai', profile_version: 7, registry_version: 'r1-0123456789ab' });
    expect(modelCallProjection.evolve(undefined, started(base))).toMatchObject({
      profile_name: null,
      profile_version: null,
      registry_version: null,
    });
  });
});

describe('model.request.started v4 (fallback models, ADR 0046)', () => {
  const v3 = JSON.parse(
    fs.readFileSync(path.join(__dirname, '..', '..', 'fixtures', 'events', 'model.request.started.v3.json'), 'utf8'),
  ) as typeof fixture;

  it('upcasts the frozen v3 fixture with fallbackFrom null', () => {
    const r = upcast(1, v3.event_type, v3.payload_schema_version, v3.payload);
    expect(r).toEqual({ version: 4, payload: v3.expected_current });
    expect(validatePayload('model.request.started', r.payload)).toBeNull();
  });

  it('accepts a v3-shaped payload on append (fallbackFrom is optional) and a fallback with its reason', () => {
    expect(validatePayload('model.request.started', v3.payload)).toBeNull();
    const from = { provider: 'openai', model: 'gpt-5-mini', reason: 'rate_limited' };
    expect(validatePayload('model.request.started', { ...v3.payload, fallbackFrom: from })).toBeNull();
    expect(
      validatePayload('model.request.started', { ...v3.payload, fallbackFrom: { ...from, reason: 'bored' } }),
    ).not.toBeNull();
  });
});

describe('the bench run lifecycle', () => {
  it('still produces events the catalog accepts, model.request.started at v4', () => {
    const events = [sessionCreated(1), ...runLifecycle(1)];
    const encoded = events.map((e, i) => encodeEvent(e, i));
    expect(encoded.filter((x) => x.type === 'model.request.started').map((x) => x.version)).toEqual([4, 4]);
  });
});
