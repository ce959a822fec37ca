import * as fs from 'node:fs';
import * as path from 'node:path';
import { upcast } from '../../../src/domain/events/upcasters';
import { EVENT_CATALOG } from '../../../src/domain/events/catalog';

/**
 * The frozen v1 payloads of the event types whose shape changed for the tool lifecycle, the artifact
 * store, approve with edits and memory sources' stream keys (ADR 0059).
 */
describe.each([
  'tool.call.completed.v1.json',
  'approval.requested.v1.json',
  'artifact.created.v1.json',
  'approval.resolved.v1.json',
  'run.queued.v3.json',
  'run.completed.v1.json',
  'run.failed.v1.json',
  'memory.recorded.v1.json',
  'memory.updated.v1.json',
])('frozen fixture %s', (file) => {
  const fixture = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'fixtures', 'events', file), 'utf8'));
  it('upcasts to the current shape', () => {
    const r = upcast(1, fixture.event_type, fixture.payload_schema_version, fixture.payload);
    expect(r.version).toBe(EVENT_CATALOG[fixture.event_type as keyof typeof EVENT_CATALOG].currentVersion);
    expect(r.payload).toEqual(fixture.expected_current);
  });
});
