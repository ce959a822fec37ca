import { event, type Actor } from '../../../src/domain/deciders/decider';
import { scheduleDecider, type OccurrenceFacts } from '../../../src/domain/deciders/schedule';
import { DEFAULT_LIMITS } from '../../../src/domain/run/limits';
import type { ScheduleDefinition } from '../../../src/domain/schedules/schedule';
import { deciderSpec, stored } from '../../support/decider-spec';

const spec = deciderSpec(scheduleDecider);
const user: Actor = { actorType: 'user', actorId: 'u1' };
const scheduler: Actor = { actorType: 'system', actorId: 'scheduler' };
const def: ScheduleDefinition = {
  title: 'Morning',
  message: 'say good morning',
  cadence: { kind: 'daily', time: '08:00', timeZone: 'Europe/Paris' },
  agentId: 'general',
  agentVersion: 1,
  scopes: ['tools.use'],
  limits: DEFAULT_LIMITS,
  misfire: 'run_once',
  maxConsecutiveFailures: 3,
};
const created = stored(
  event(
    'schedule.created',
    { revision: 1, principalId: 'u1', definition: def, nextFireAt: '2027-01-01T07:00:00.000Z' },
    user,
  ),
);
const refused: OccurrenceFacts = { kind: 'refused', reason: 'scope_revoked', message: 'u1 no longer holds tools.use' };
const record = (nominalAt: string, facts: OccurrenceFacts, nextFireAt: string | null = '2027-01-09T07:00:00.000Z') =>
  ({
    kind: 'RecordOccurrence',
    actor: scheduler,
    occurrenceId: 'o-' + nominalAt,
    nominalAt,
    facts,
    missedCount: 0,
    nextFireAt,
    principalId: 'alice',
  }) as const;
const failedAt = (nominalAt: string, consecutiveFailures: number) =>
  stored(
    event(
      'schedule.occurrence.failed',
      {
        occurrenceId: 'o-' + nominalAt,
        nominalAt,
        revision: 1,
        reason: 'scope_revoked',
        message: 'x',
        consecutiveFailures,
        nextFireAt: '2027-01-09T07:00:00.000Z',
        principalId: 'alice',
      },
      scheduler,
    ),
  );

describe('schedule decider', () => {
  it('creates revision 1, and refuses to create twice', () => {
    spec
      .given()
      .when({
        kind: 'CreateSchedule',
        actor: user,
        principalId: 'u1',
        definition: def,
        nextFireAt: '2027-01-01T07:00:00.000Z',
      })
      .then([
        event(
          'schedule.created',
          { revision: 1, principalId: 'u1', definition: def, nextFireAt: '2027-01-01T07:00:00.000Z' },
          user,
        ),
      ]);
    spec
      .given([created])
      .when({ kind: 'CreateSchedule', actor: user, principalId: 'u1', definition: def, nextFireAt: null })
      .thenRefuses('conflict');
  });

  it('updates to the next revision with the fields that changed; a stale expected revision is a conflict', () => {
    const next = { ...def, message: 'say hello' };
    spec
      .given([created])
      .when({
        kind: 'UpdateSchedule',
        actor: user,
        expectedRevision: 1,
        definition: next,
        nextFireAt: '2027-01-02T07:00:00.000Z',
      })
      .then([
        event(
          'schedule.updated',
          { revision: 2, definition: next, changed: ['message'], nextFireAt: '2027-01-02T07:00:00.000Z' },
          user,
        ),
      ]);
    spec
      .given([created])
      .when({ kind: 'UpdateSchedule', actor: user, expectedRevision: 3, definition: next, nextFireAt: null })
      .thenRefuses('conflict', /revision 1, not 3/);
    spec
      .given([created])
      .when({ kind: 'UpdateSchedule', actor: user, expectedRevision: null, definition: def, nextFireAt: null })
      .then([]);
  });

  it('pauses and resumes (idempotently); a cancelled schedule never reopens', () => {
    const paused = stored(event('schedule.paused', { reason: 'requested', detail: null }, user));
    spec
      .given([created])
      .when({ kind: 'PauseSchedule', actor: user })
      .then([event('schedule.paused', { reason: 'requested', detail: null }, user)]);
    spec.given([created, paused]).when({ kind: 'PauseSchedule', actor: user }).then([]);
    spec
      .given([created, paused])
      .when({ kind: 'ResumeSchedule', actor: user, nextFireAt: '2027-02-01T07:00:00.000Z' })
      .then([event('schedule.resumed', { nextFireAt: '2027-02-01T07:00:00.000Z' }, user)]);
    const cancelled = stored(event('schedule.cancelled', { reason: null }, user));
    spec
      .given([created, cancelled])
      .when({ kind: 'ResumeSchedule', actor: user, nextFireAt: 'x' })
      .thenRefuses('invalid_state_transition');
    spec.given([created, cancelled]).when({ kind: 'CancelSchedule', actor: user, reason: null }).then([]);
    spec.given([]).when({ kind: 'PauseSchedule', actor: user }).thenRefuses('not_found');
  });

  it('records a fired, skipped or failed occurrence, and never one instant twice', () => {
    const runnable: OccurrenceFacts = { kind: 'runnable', sessionId: 's1', runId: 'r1' };
    spec
      .given([created])
      .when(record('2027-01-01T07:00:00.000Z', runnable))
      .then([
        event(
          'schedule.occurrence.fired',
          {
            occurrenceId: 'o-2027-01-01T07:00:00.000Z',
            nominalAt: '2027-01-01T07:00:00.000Z',
            revision: 1,
            sessionId: 's1',
            runId: 'r1',
            missedCount: 0,
            nextFireAt: '2027-01-09T07:00:00.000Z',
          },
          scheduler,
        ),
      ]);
    spec
      .given([created])
      .when(record('2027-01-01T07:00:00.000Z', { kind: 'overlap', activeRunId: 'r0' }))
      .then([
        event(
          'schedule.occurrence.skipped',
          {
            occurrenceId: 'o-2027-01-01T07:00:00.000Z',
            nominalAt: '2027-01-01T07:00:00.000Z',
            revision: 1,
            status: 'skipped_overlap',
            activeRunId: 'r0',
            missedCount: 0,
            nextFireAt: '2027-01-09T07:00:00.000Z',
          },
          scheduler,
        ),
      ]);
    spec
      .given([created, failedAt('2027-01-01T07:00:00.000Z', 1)])
      .when(record('2027-01-01T07:00:00.000Z', runnable))
      .thenRefuses('conflict', /recorded already/);
  });

  it('pauses itself after the third consecutive failure, saying why', () => {
    const history = [created, failedAt('2027-01-01T07:00:00.000Z', 1), failedAt('2027-01-02T07:00:00.000Z', 2)];
    const d = spec.given(history).when(record('2027-01-03T07:00:00.000Z', refused)).decision;
    expect(d.kind === 'events' && d.events.map((e) => e.type)).toEqual([
      'schedule.occurrence.failed',
      'schedule.paused',
    ]);
    expect(d.kind === 'events' && d.events[1].data).toEqual({
      reason: 'consecutive_failures',
      detail: '3 consecutive occurrences failed; the last: scope_revoked',
    });
    // A paused schedule fires nothing.
    const paused = stored(event('schedule.paused', { reason: 'consecutive_failures', detail: 'x' }, scheduler));
    spec
      .given([...history, paused])
      .when(record('2027-01-04T07:00:00.000Z', refused))
      .thenRefuses('conflict');
  });
});
