import fs from 'node:fs';
import path from 'node:path';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { upcast } from '../../../src/domain/events/upcasters';
import { memoryRecordProjection } from '../../../src/domain/projections/memory-record-projection';

// ADR 0059: the memory record keeps its sources' stream keys, once each in id order, as the events
// record them; sources recorded before (a v1 event, upcast) have none, and reinforcement adds keys
// only for the sources it brings.
const CONVERSATION = '44444444-4444-4444-8444-444444444444';
const OTHER = '55555555-5555-4555-8555-555555555555';
const fixture = (name: string) =>
  JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'fixtures', 'events', name), 'utf8'));

const ev = (sequence: number, type: string, version: number, payload: Record<string, unknown>) =>
  ({
    id: 100 + sequence,
    sessionId: '66666666-6666-4666-8666-666666666666',
    sequence,
    runId: null,
    type,
    schemaVersion: version,
    data: upcast(100 + sequence, type, version, payload).payload,
    actorType: 'worker',
    actorId: null,
    tenantId: 'local',
    traceId: null,
    createdAt: `2026-12-04T10:00:0${sequence}.000Z`,
  }) as unknown as StoredEvent;

const fold = (events: StoredEvent[]) =>
  events.reduce<Record<string, unknown> | undefined>((row, e) => memoryRecordProjection.evolve(row, e), undefined)!;

const recordedV1 = fixture('memory.recorded.v1.json').payload as Record<string, unknown>;
const recordedV2 = {
  ...recordedV1,
  sourceEventIds: [12, 41],
  sourceEvents: [
    { id: 41, sessionId: CONVERSATION, sequence: 9 },
    { id: 12, sessionId: CONVERSATION, sequence: 3 },
  ],
};
const reinforced = (ids: number[], keys?: { id: number; sessionId: string; sequence: number }[]) => ({
  memoryId: recordedV1.memoryId,
  change: 'reinforced',
  addedSourceEventIds: ids,
  ...(keys ? { addedSourceEvents: keys } : {}),
  invocationId: null,
});

describe('the memory record projection: source keys (ADR 0059)', () => {
  it('keeps each source as [id, session, sequence], in id order', () => {
    const row = fold([ev(1, 'memory.recorded', 2, recordedV2)]);
    expect(row.source_event_ids).toEqual([12, 41]);
    expect(row.source_events).toEqual([
      [12, CONVERSATION, 3],
      [41, CONVERSATION, 9],
    ]);
  });

  it('adds a reinforcement’s keys once, whatever session they are in', () => {
    const again = reinforced(
      [41, 57],
      [
        { id: 57, sessionId: OTHER, sequence: 2 },
        { id: 41, sessionId: CONVERSATION, sequence: 9 },
      ],
    );
    const row = fold([ev(1, 'memory.recorded', 2, recordedV2), ev(2, 'memory.updated', 2, again)]);
    expect(row.source_event_ids).toEqual([12, 41, 57]);
    expect(row.source_events).toEqual([
      [12, CONVERSATION, 3],
      [41, CONVERSATION, 9],
      [57, OTHER, 2],
    ]);
  });

  it('has no keys for sources recorded by a v1 event, and gains only the new ones', () => {
    const before = fold([ev(1, 'memory.recorded', 1, recordedV1)]);
    expect(before.source_event_ids).toEqual([41]);
    expect(before.source_events).toEqual([]);
    const row = fold([
      ev(1, 'memory.recorded', 1, recordedV1),
      ev(2, 'memory.updated', 1, reinforced([50])),
      ev(3, 'memory.updated', 2, reinforced([57], [{ id: 57, sessionId: OTHER, sequence: 2 }])),
    ]);
    expect(row.source_event_ids).toEqual([41, 50, 57]);
    expect(row.source_events).toEqual([[57, OTHER, 2]]);
  });
});
