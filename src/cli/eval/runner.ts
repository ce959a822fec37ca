import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { GetRunQuery, ListRunEventsQuery } from '../../application/runs/queries';
import { SubmitMessageCommand, type SubmittedRun } from '../../application/runs/submit-message';
import { CreateSessionCommand } from '../../application/sessions/create-session';
import { AppModule } from '../../composition/app.module';
import type { Platform } from '../../composition/platform';
import { LOCAL_PRINCIPAL, type Principal } from '../../domain/principal';
import { checkExpectations } from './assertions';
import type { EvalCase } from './case-types';
import { driveRun, type Buses } from './drive-run';
import type { EvalResult } from './eval-result';
import type { DelegationObservation } from './observation';
import type { RunRecord } from '../../domain/run/run';

/**
 * Evaluations run as their own principal in the local tenant: the same policy and scopes as the
 * local user (there is no test mode), but their sessions are not mixed into the user's own.
 */
export const EVAL_PRINCIPAL: Principal = { ...LOCAL_PRINCIPAL, principalId: 'eval-harness' };

/** Default time a case may take to reach a terminal event. */
export const DEFAULT_CASE_TIMEOUT_MS = 30_000;

export interface RunSuiteOptions {
  /** Called as each case finishes (progress output). */
  readonly onResult?: (r: EvalResult) => void;
  readonly defaultTimeoutMs?: number;
  readonly principal?: Principal;
}

/**
 * Runs the cases one after another, each in its own session with its own in-process worker that
 * claims only that case's run, and checks the assertions against the stored events and the run
 * read model. Sequential on purpose: a crash case must not abandon another case's run.
 */
export async function runSuite(
  platform: Platform,
  cases: readonly EvalCase[],
  opts: RunSuiteOptions = {},
): Promise<EvalResult[]> {
  const app: INestApplicationContext = await NestFactory.createApplicationContext(
    AppModule.forPlatform(platform, { http: false }),
    {
      logger: false,
    },
  );
  try {
    const buses: Buses = { commands: app.get(CommandBus), queries: app.get(QueryBus) };
    const results: EvalResult[] = [];
    for (const c of cases) {
      const r = await runCase(platform, buses, c, opts);
      results.push(r);
      opts.onResult?.(r);
    }
    return results;
  } finally {
    await app.close();
  }
}

async function runCase(platform: Platform, buses: Buses, c: EvalCase, opts: RunSuiteOptions): Promise<EvalResult> {
  const t0 = Date.now();
  const done = (failures: string[], runId: string | null): EvalResult => ({
    name: c.id,
    status: failures.length === 0 ? 'passed' : 'failed',
    failures,
    durationMs: Date.now() - t0,
    runId,
    pendingReason: null,
  });
  if (c.pending !== null)
    return { name: c.id, status: 'pending', failures: [], durationMs: 0, runId: null, pendingReason: c.pending };
  let runId: string | null = null;
  try {
    const principal = opts.principal ?? EVAL_PRINCIPAL;
    const session = await buses.commands.execute(new CreateSessionCommand(principal, c.agentId, `eval ${c.id}`));
    const earlier = await playPrecedingTurns(platform, buses, c, principal, session.id, opts);
    if (earlier.failures.length > 0) return done(earlier.failures, earlier.runId);
    const submitted = await submit(platform, buses, c, principal, session.id);
    runId = submitted[0].runId;
    const { failures, sse } = await driveRun(
      platform,
      buses,
      c,
      principal,
      runId,
      opts.defaultTimeoutMs ?? DEFAULT_CASE_TIMEOUT_MS,
    );
    const [run, events, sessionEvents] = await Promise.all([
      buses.queries.execute(new GetRunQuery(principal, runId)),
      buses.queries.execute(new ListRunEventsQuery(principal, runId)),
      platform.store.listAfter(session.id, 0, principal, 1_000_000),
    ]);
    const submittedTexts = [...c.input.precedingTurns.map((t) => t.text), c.input.text];
    const delegation = c.expected.children ? await observeChildren(platform, principal, run) : null;
    failures.push(
      ...checkExpectations(c.expected, {
        run,
        events,
        sessionEvents,
        submissions: submitted,
        submittedTexts,
        ...(sse ? { sse } : {}),
        ...(delegation ? { delegation } : {}),
      }),
    );
    return done(failures, runId);
  } catch (e) {
    return done([`harness error: ${e instanceof Error ? e.message : String(e)}`], runId);
  }
}

/** The run's children (delegate.run or consensus rounds), each with its limits and events. */
async function observeChildren(
  platform: Platform,
  principal: Principal,
  run: RunRecord,
): Promise<DelegationObservation> {
  const children = await platform.childRunStore.childrenOf(run.id, principal.tenantId);
  const observed = await Promise.all(
    children.map(async (c) => {
      const [row, events] = await Promise.all([
        platform.runs.get(c.runId, principal),
        platform.store.listRunEvents(c.runId, principal),
      ]);
      return { runId: c.runId, status: c.status, usage: c.usage, limits: row!.limits, events };
    }),
  );
  return { usage: run.usage, limits: run.limits, children: observed };
}

/**
 * Submits the case's preceding turns (long-session cases) one after another in its session, each
 * driven to a terminal state by its own worker; any turn that does not complete fails the case.
 */
async function playPrecedingTurns(
  platform: Platform,
  buses: Buses,
  c: EvalCase,
  principal: Principal,
  sessionId: string,
  opts: RunSuiteOptions,
): Promise<{ failures: string[]; runId: string | null }> {
  const quiet: EvalCase = { ...c, interventions: [], timeoutSeconds: null };
  let runId: string | null = null;
  for (const [i, turn] of c.input.precedingTurns.entries()) {
    const run: SubmittedRun = await buses.commands.execute(
      new SubmitMessageCommand(principal, sessionId, turn.text, null, {
        modelPolicy: `fake:${turn.modelFixture ?? c.modelFixture}`,
        limits: c.limits,
      }),
    );
    runId = run.runId;
    const { failures } = await driveRun(
      platform,
      buses,
      quiet,
      principal,
      run.runId,
      opts.defaultTimeoutMs ?? DEFAULT_CASE_TIMEOUT_MS,
    );
    const done = await buses.queries.execute(new GetRunQuery(principal, run.runId));
    if (failures.length > 0 || done.status !== 'completed') {
      const why = done.failure ? ` (${done.failure.reason}: ${done.failure.message})` : '';
      return { failures: [`preceding turn ${i + 1} ended ${done.status}${why}`, ...failures], runId };
    }
  }
  return { failures: [], runId };
}

/** Submits the case's message; twice with one fresh idempotency key when the case asks for it. */
async function submit(
  platform: Platform,
  buses: Buses,
  c: EvalCase,
  principal: Principal,
  sessionId: string,
): Promise<SubmittedRun[]> {
  // A fresh key per execution: keys are per principal, so a fixed one would replay an older eval's run.
  const key = c.input.repeatWithSameIdempotencyKey ? `eval:${c.id}:${platform.ids.uuid()}` : null;
  const command = () =>
    new SubmitMessageCommand(principal, sessionId, c.input.text, key, {
      modelPolicy: `fake:${c.modelFixture}`,
      limits: c.limits,
    });
  const first = await buses.commands.execute(command());
  if (!c.input.repeatWithSameIdempotencyKey) return [first];
  return [first, await buses.commands.execute(command())];
}
