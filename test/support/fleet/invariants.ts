import { Client } from 'pg';
import type { DrivenRun } from './drive';

/** What the database and the SSE watchers say about a load of driven runs (all counts; 0 is good unless named otherwise). */
export interface FleetVerdict {
  readonly runs: number;
  /** Runs whose status is `completed` with the expected answer (should equal `runs`). */
  readonly completedAsExpected: number;
  /** Runs not completed, or completed with another answer: `index: status / final text`. */
  readonly wrong: string[];
  /** Sessions whose sequences are not exactly 1..n. */
  readonly gappySessions: number;
  /** Runs with more than one terminal event or final assistant message. */
  readonly duplicateTerminals: number;
  /** Tool invocations completed more than once, or completions beyond the distinct calls proposed. */
  readonly duplicateEffects: number;
  /** Runs whose SSE watcher missed one of the run's events, saw one twice, or saw them out of order. */
  readonly incompleteStreams: number;
  /** Runs claimed more than once (recovered after a kill or a failover): informative. */
  readonly reclaimedRuns: number;
}

interface EventRow {
  run_id: string | null;
  session_id: string;
  sequence: number;
  event_type: string;
  invocation: string | null;
}

/** Checks the invariants of every driven run against the database at `url`. */
export async function checkFleet(url: string, runs: readonly DrivenRun[]): Promise<FleetVerdict> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    const ids = runs.filter((r) => r.runId).map((r) => r.runId);
    const sessions = runs.filter((r) => r.sessionId).map((r) => r.sessionId);
    const status = new Map(
      (
        await c.query<{ id: string; status: string; final_text: string | null }>(
          'SELECT id, status, final_text FROM runs WHERE id = ANY($1::uuid[])',
          [ids],
        )
      ).rows.map((r) => [r.id, r]),
    );
    const events = (
      await c.query<EventRow>(
        `SELECT run_id, session_id, sequence::int AS sequence, event_type, payload->>'invocationId' AS invocation
           FROM events e WHERE session_id = ANY($1::uuid[]) ORDER BY e.session_id, e.sequence`,
        [sessions],
      )
    ).rows;
    return verdict(runs, status, events);
  } finally {
    await c.end();
  }
}

function verdict(
  runs: readonly DrivenRun[],
  status: Map<string, { status: string; final_text: string | null }>,
  events: readonly EventRow[],
): FleetVerdict {
  const bySession = group(events, (e) => e.session_id);
  const byRun = group(
    events.filter((e) => e.run_id),
    (e) => e.run_id!,
  );
  const wrong: string[] = [];
  let gappySessions = 0;
  let duplicateTerminals = 0;
  let duplicateEffects = 0;
  let incompleteStreams = 0;
  let reclaimedRuns = 0;
  for (const [, list] of bySession) if (list.some((e, i) => e.sequence !== i + 1)) gappySessions += 1;
  for (const r of runs) {
    const row = status.get(r.runId);
    if (row?.status !== 'completed' || row.final_text !== r.expected)
      wrong.push(`${r.index}: ${row?.status ?? r.error ?? 'no run'} / ${row?.final_text ?? ''}`);
    const list = byRun.get(r.runId) ?? [];
    const count = (t: string) => list.filter((e) => e.event_type === t).length;
    if (count('run.completed') + count('run.failed') + count('run.cancelled') > 1) duplicateTerminals += 1;
    if (count('assistant.message.completed') > 1) duplicateTerminals += 1;
    const completions = list.filter((e) => e.event_type === 'tool.call.completed').map((e) => e.invocation);
    const proposed = new Set(list.filter((e) => e.event_type === 'tool.call.proposed').map((e) => e.invocation));
    if (new Set(completions).size !== completions.length || completions.length > proposed.size) duplicateEffects += 1;
    if (count('run.claimed') > 1) reclaimedRuns += 1;
    const expectedIds = list.map((e) => e.sequence);
    if (JSON.stringify(r.sseIds) !== JSON.stringify(expectedIds)) incompleteStreams += 1;
  }
  return {
    runs: runs.length,
    completedAsExpected: runs.length - wrong.length,
    wrong: wrong.slice(0, 10),
    gappySessions,
    duplicateTerminals,
    duplicateEffects,
    incompleteStreams,
    reclaimedRuns,
  };
}

function group<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const i of items) {
    const k = key(i);
    const list = m.get(k);
    if (list) list.push(i);
    else m.set(k, [i]);
  }
  return m;
}
