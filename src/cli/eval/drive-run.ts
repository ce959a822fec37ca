import type { CommandBus, QueryBus } from '@nestjs/cqrs';
import { CancelRunCommand } from '../../application/runs/cancel-run';
import { ResolveApprovalCommand } from '../../application/approvals/commands';
import { ProvideRunInputCommand } from '../../application/runs/provide-input';
import { GetRunQuery } from '../../application/runs/queries';
import type { Platform } from '../../composition/platform';
import type { StoredEvent } from '../../domain/events/payloads';
import type { Principal } from '../../domain/principal';
import { followRun } from '../follow-run';
import type { EvalCase, Intervention } from './case-types';
import { describeIntervention, InterventionTracker } from './interventions';
import type { SseObservation } from './observation';
import { SseReplayProbe } from './sse-replay';

type Worker = ReturnType<Platform['createWorker']>;

/** The CQRS buses the harness talks to: the same application services as the API and the CLI. */
export interface Buses {
  readonly commands: CommandBus;
  readonly queries: QueryBus;
}

/** Applies one intervention observed in the log (crashes are applied at the worker's commit instead). */
async function applyIntervention(
  platform: Platform,
  buses: Buses,
  principal: Principal,
  runId: string,
  i: Intervention,
): Promise<void> {
  switch (i.action) {
    case 'cancel':
      await buses.commands.execute(
        new CancelRunCommand(principal, runId, `eval intervention: ${describeIntervention(i)}`),
      );
      return;
    case 'crash_worker':
      throw new Error("a crash is applied at the worker's commit of its event, not from the log");
    case 'disconnect_sse':
      throw new Error("a disconnect is applied by the harness's SSE client when it receives its event");
    case 'approve':
    case 'deny':
    case 'review_retry':
    case 'review_fail': {
      // The run's pending approval of the right kind (a policy approval, or an UNCERTAIN review).
      const kind = i.action.startsWith('review') ? 'uncertain_review' : 'tool_call';
      const pending = (await platform.toolRecords.pendingApprovalsOfRun(runId)).filter((a) => a.actionKind === kind);
      if (pending.length === 0) throw new Error(`the run has no pending ${kind} approval`);
      const approve = i.action === 'approve' || i.action === 'review_retry';
      await buses.commands.execute(
        new ResolveApprovalCommand(
          principal,
          pending[0].id,
          approve ? 'approve_once' : 'deny',
          approve ? null : (i.text ?? `eval intervention: ${describeIntervention(i)}`),
        ),
      );
      return;
    }
    case 'provide_input':
      await buses.commands.execute(new ProvideRunInputCommand(principal, runId, i.text ?? 'yes'));
      return;
    default: {
      const never: never = i.action;
      throw new Error(`unknown intervention ${String(never)}`);
    }
  }
}

/** What driving a run produced besides its events: failures of the execution itself, and the SSE client's view. */
export interface DriveResult {
  readonly failures: string[];
  readonly sse: SseObservation | null;
}

/**
 * Drives the run to a terminal event with a worker restricted to it, applying interventions as
 * their events are observed. Returns the failures of the execution itself (timeout, interventions
 * that could not be applied or never fired); assertions are checked afterwards.
 */
export async function driveRun(
  platform: Platform,
  buses: Buses,
  c: EvalCase,
  principal: Principal,
  runId: string,
  defaultTimeoutMs: number,
): Promise<DriveResult> {
  // The SSE client of `disconnect_sse` connects before the worker starts, so it sees the whole run.
  const sse = await SseReplayProbe.start(platform, principal, runId, c.interventions);
  try {
    return await driveWith(platform, buses, c, principal, runId, defaultTimeoutMs, sse);
  } catch (e) {
    await sse?.finish().catch(() => undefined); // its HTTP API must not outlive the case
    throw e;
  }
}

async function driveWith(
  platform: Platform,
  buses: Buses,
  c: EvalCase,
  principal: Principal,
  runId: string,
  defaultTimeoutMs: number,
  sse: SseReplayProbe | null,
): Promise<DriveResult> {
  const failures: string[] = [];
  let applying: Promise<void> = Promise.resolve();
  const failed = (i: Intervention) => (err: unknown) => {
    failures.push(
      `intervention ${describeIntervention(i)} failed: ${err instanceof Error ? err.message : String(err)}`,
    );
  };
  const apply = (i: Intervention) => applyIntervention(platform, buses, principal, runId, i);
  // A crash lands exactly at its event: the worker's own commit of it stops the worker before its
  // loop goes on (the loop's next check sees the abort), like a process killed right after that
  // commit. Observed through the event log instead, it would land some milliseconds later — after
  // whatever the loop did next (a tool already started) — and test a different point each time.
  const crashes = new InterventionTracker(c.interventions.filter((i) => i.action === 'crash_worker'));
  const crashAt = (crashed: Worker, events: readonly StoredEvent[]): void => {
    for (const e of events) {
      for (const i of crashes.observe(e)) {
        const stopping = crashed.crash(); // aborts the run synchronously, then waits for it to stop
        applying = applying
          .then(async () => {
            await stopping;
            // A fresh worker reclaims the run once the lease expires, which is what crash cases test.
            worker = newWorker();
            await worker.start();
            // A crash that abandoned nothing (the run had already finished) tested nothing.
            if (crashed.stats.abandoned === 0) throw new Error('the worker had no run in flight to abandon');
          })
          .catch(failed(i));
      }
    }
  };
  // A cancel lands exactly at its event too when the run loop commits that event: the loop waits
  // at that commit until the cancel is committed (a user who cancels while, say, the first model call
  // is in flight). Observed through the log it came some milliseconds later, and under load after
  // the loop had already moved on (case 15's second model call). At an event the loop does not
  // commit (run.queued, run.started: the submit's, the claim's), it fires from the log as before.
  const cancels = new InterventionTracker(c.interventions.filter((i) => i.action === 'cancel'));
  const applied = new Set<Intervention>();
  const cancelAt = (events: readonly StoredEvent[]): Promise<void> | undefined => {
    const due = events.flatMap((e) => cancels.observe(e)).filter((i) => !applied.has(i));
    if (due.length === 0) return undefined;
    for (const i of due) applied.add(i);
    const cancelled = due.reduce<Promise<void>>((p, i) => p.then(() => apply(i)).catch(failed(i)), Promise.resolve());
    applying = applying.then(() => cancelled);
    return cancelled;
  };
  const newWorker = (): Worker => {
    const w: Worker = platform.createWorker({
      onlyRunId: runId,
      concurrency: 1,
      pollIntervalMs: 200,
      drainMs: 0,
      onCommitted: (events) => {
        crashAt(w, events);
        return cancelAt(events);
      },
    });
    return w;
  };
  let worker = newWorker();
  await worker.start();
  const tracker = new InterventionTracker(
    c.interventions.filter((i) => i.action !== 'crash_worker' && i.action !== 'disconnect_sse'),
  );
  const timeoutMs = caseTimeoutMs(c, platform, defaultTimeoutMs);
  let terminal: StoredEvent | null;
  try {
    terminal = await followRun(
      platform,
      runId,
      principal,
      (e, { child }) => {
        // The case observes its own run; a child run's events are the child's (its own session).
        if (child !== null) return;
        sse?.observeLog(e);
        for (const i of tracker.observe(e)) {
          if (applied.has(i)) continue;
          applied.add(i);
          // Interventions run in order, off the follow loop, so the loop keeps reading events.
          applying = applying.then(() => apply(i)).catch(failed(i));
        }
      },
      timeoutMs,
    );
    await applying;
  } finally {
    await worker.stop(0);
  }
  if (!terminal) failures.unshift(await abandonTimedOut(buses, principal, runId, timeoutMs));
  return finishDrive(failures, [...crashes.unfired(), ...tracker.unfired().filter((x) => !applied.has(x))], sse);
}

/** The drive's result: its failures, each intervention that never fired, and the SSE client's view. */
async function finishDrive(
  failures: string[],
  unfired: readonly Intervention[],
  sse: SseReplayProbe | null,
): Promise<DriveResult> {
  for (const i of unfired)
    failures.push(`intervention ${describeIntervention(i)} never fired: no such event was observed`);
  const seen = sse ? await sse.finish() : null;
  if (seen) failures.push(...seen.failures);
  return { failures, sse: seen?.observation ?? null };
}

/** The case's timeout; each crash waits out a lease before the run can move again, so it extends it. */
function caseTimeoutMs(c: EvalCase, platform: Platform, defaultTimeoutMs: number): number {
  const crashCount = c.interventions.filter((i) => i.action === 'crash_worker').length;
  const base = c.timeoutSeconds !== null ? c.timeoutSeconds * 1000 : defaultTimeoutMs;
  return base + crashCount * platform.settings.leaseSeconds * 1000;
}

/**
 * A run that reached no terminal event in time: cancelled, so no other worker picks it up later
 * (the driving worker's stop released it). Returns the failure to report.
 */
async function abandonTimedOut(buses: Buses, principal: Principal, runId: string, timeoutMs: number): Promise<string> {
  const run = await buses.queries.execute(new GetRunQuery(principal, runId));
  await buses.commands.execute(new CancelRunCommand(principal, runId, 'eval case timed out')).catch(() => undefined);
  return `timed out after ${Math.round(timeoutMs / 1000)} s without a terminal event (run is ${run.status})`;
}
