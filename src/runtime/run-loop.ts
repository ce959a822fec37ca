import { enabledToolNames, mcpGrantsOf, type AgentSpec } from '../domain/agent';
import type { ToolCallItem } from '../domain/conversation/items';
import {
  ConcurrencyConflict,
  ContextBuildError,
  ContextOverflow,
  LeaseFencedError,
  ModelPermanentError,
} from '../domain/errors';
import type { NewEvent, StoredEvent } from '../domain/events/payloads';
import { assembleTurn } from '../domain/model/assembler';
import type { ModelAttempt, ModelTurn } from '../domain/model/model-events';
import type { Principal } from '../domain/principal';
import type { CheckpointState, ContextCheckpointRef } from '../domain/run/checkpoint';
import type { FailureReason } from '../domain/run/failure';
import type { RunClaim, RunRecord } from '../domain/run/run';
import { isTerminal } from '../domain/run/status';
import { priceModelCall, totalInputTokens } from '../domain/run/usage';
import { withProviderContinuation } from '../context/context-builder';
import { ContextEngine, type BuiltContext, type ContextBuildInputs } from '../context/engine';
import type { AgentCatalog } from '../ports/agent-catalog';
import type { Clock, IdFactory } from '../ports/clock';
import type { EventStore } from '../ports/event-store';
import type { Logger } from '../ports/logger';
import { noopMetrics, type Metrics } from '../ports/metrics';
import type { CheckpointStore, RunQueue, RunRepository, TransientPublisher } from '../ports/run-store';
import type { ToolRecordStore } from '../ports/tool-records';
import type { PolicyEngine } from '../policy/policy-engine';
import type { ToolRegistry } from '../tools/registry';
import type { ModelRoute, ModelRouter } from './model-router';

/** How long the run loop waits for a provider usage API before pricing from the next source. */
const USAGE_API_TIMEOUT_MS = 5_000;
import { backoffMs, classifyModelError } from './retry';
import { LoopStopped, stopReasonOf } from './stop-reason';
import { ToolPipeline, type ToolCallOutcome } from './tool-pipeline';
import { RunTelemetry, withTraceId, type AttemptSpan } from './tracing';
import type { SessionToolCache } from './session-tool-cache';
import type { ToolResultArtifacts } from './tool-result-artifacts';
import type { SkillSource } from '../ports/skills';
import { skillEnabled } from '../tools/skills/skill-load';
import { agentVersionMemo, type MemoizedAgentCatalog } from './agent-memo';
import {
  CancelRequestedSince,
  LeaseScope,
  usageAfterResponse,
  type KnownCheckpoint,
  type WriteCondition,
} from './lease-scope';
import { isPureComputation } from '../domain/tools/tool-spec';

export interface RunLoopDeps {
  readonly store: EventStore;
  readonly runs: RunRepository;
  readonly checkpoints: CheckpointStore;
  readonly queue: RunQueue;
  readonly router: ModelRouter;
  readonly registry: ToolRegistry;
  readonly agents: AgentCatalog;
  readonly transient: TransientPublisher;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly log: Logger;
  readonly principalFor: (run: RunRecord) => Principal;
  /** Tool lifecycle read models (invocations, approvals) for idempotency and recovery. */
  readonly records: ToolRecordStore;
  /** The deterministic, versioned tool policy (plan §9). */
  readonly policy: PolicyEngine;
  /** Plan §19 metrics; none recorded when omitted. */
  readonly metrics?: Metrics;
  /** The context engine (plan §11); one with the extractive compactor over `store` when absent. */
  readonly context?: ContextEngine;
  /** Tool definitions pinned per session (MCP tools may change under a running session); optional. */
  readonly sessionTools?: SessionToolCache;
  /** Where oversized tool results are kept (plan §18.4); without it they are only truncated. */
  readonly artifacts?: ToolResultArtifacts;
  /** The process's skills (metadata rendered in the prefix for agents that enable them); optional. */
  readonly skills?: SkillSource;
  /**
   * Called with the events of every append this loop commits, after the commit and before the loop
   * goes on (synchronously, so a stop it triggers is seen at the loop's next check; a promise it
   * returns is waited for before the loop goes on). The eval harness crashes its worker, or cancels
   * the run, exactly at an event through it; nothing else should need it.
   */
  readonly onCommitted?: CommitObserver;
}

/** Sees the events of each commit of a run loop before the loop goes on (`RunLoopDeps.onCommitted`). */
export type CommitObserver = (events: readonly StoredEvent[]) => void | Promise<void>;

/** A tool call that must wait for a human (approval, review or user input). */
type Suspension = Extract<ToolCallOutcome, { kind: 'suspend' }>;

export interface RunLoopSettings {
  readonly leaseMs: number;
  readonly maxModelAttempts: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
}

export type RunLoopResult = 'finished' | 'released' | 'fenced' | 'abandoned';

type Outcome = (
  | { kind: 'completed'; text: string }
  | { kind: 'failed'; reason: FailureReason; message: string; errorCode: string | null }
  | { kind: 'cancelled'; reason: string | null }
) & {
  /**
   * The final model response, written in the terminal append ahead of the outcome's events; its
   * step and conversation start are those of the terminal checkpoint.
   */
  readonly leading?: { readonly events: NewEvent[]; readonly step: number; readonly fromSequence: number };
};

/**
 * Executes one claimed run to a terminal outcome or a safe stop (plan §12). Every write is fenced by
 * the claim's lease epoch; no transaction is held across a model or tool call; the terminal write
 * happens exactly once, in `finalize`. A run resumed by another worker continues from its latest
 * checkpoint; with no checkpoint it re-derives the same point from the event log.
 */
export class RunLoop {
  private readonly pipeline: ToolPipeline;
  private readonly telemetry: RunTelemetry;
  private readonly context: ContextEngine;
  /** The lease scope of each execution in progress (docs/adr/0013-run-loop-round-trips.md). */
  private readonly leases = new WeakMap<RunClaim, LeaseScope>();
  private readonly contextRefs = new WeakMap<RunClaim, ContextCheckpointRef>();
  private readonly agents: MemoizedAgentCatalog;
  constructor(
    private readonly deps: RunLoopDeps,
    private readonly settings: RunLoopSettings,
  ) {
    this.telemetry = new RunTelemetry(deps.metrics ?? noopMetrics, deps.runs, () => deps.clock.nowMs());
    this.context = deps.context ?? new ContextEngine(deps.store, { log: deps.log });
    this.agents = agentVersionMemo(deps.agents);
    this.pipeline = new ToolPipeline({
      telemetry: this.telemetry,
      registry: deps.registry,
      runs: deps.runs,
      records: deps.records,
      policy: deps.policy,
      clock: deps.clock,
      ids: deps.ids,
      artifacts: deps.artifacts,
    });
  }

  /** One attempt under its `agent.run` span (`attempt`: the span the worker started before claiming). */
  execute(claim: RunClaim, shutdown: AbortSignal, attempt?: AttemptSpan): Promise<RunLoopResult> {
    return this.telemetry.attempt(
      claim,
      attempt,
      () => this.executeAttempt(claim, shutdown),
      () => this.leases.get(claim)?.run ?? null,
    );
  }

  private async executeAttempt(claim: RunClaim, shutdown: AbortSignal): Promise<RunLoopResult> {
    const controller = new AbortController();
    const onShutdown = () =>
      controller.abort(shutdown.reason instanceof LoopStopped ? shutdown.reason : new LoopStopped('shutdown'));
    shutdown.addEventListener('abort', onShutdown, { once: true });
    if (shutdown.aborted) onShutdown();
    const heartbeat = setInterval(
      () => {
        if (controller.signal.aborted) return;
        this.deps.queue.heartbeat(claim, this.settings.leaseMs).then(
          (hb) => {
            if (!hb.held) controller.abort(new LoopStopped('fenced'));
            else if (hb.cancelRequested) controller.abort(new LoopStopped('cancelled'));
          },
          (e: unknown) => this.deps.log.warn('heartbeat failed', { runId: claim.runId, error: String(e) }),
        );
      },
      Math.max(100, Math.floor(this.settings.leaseMs / 3)),
    );
    try {
      const outcome = await this.loop(claim, controller.signal);
      // A suspended run has already released its lease (WAITING_*); there is nothing left to write.
      if (outcome === 'suspended') return 'released';
      if (outcome === 'stopped' || stopReasonOf(controller.signal) === 'abandon')
        return this.stop(claim, controller.signal);
      await this.finalize(claim, outcome);
      return 'finished';
    } catch (e) {
      if (e instanceof LeaseFencedError) return 'fenced';
      if (e instanceof LoopStopped || controller.signal.aborted) return this.stop(claim, controller.signal);
      this.deps.log.error('run loop crashed', {
        runId: claim.runId,
        error: e instanceof Error ? e.message : String(e),
      });
      try {
        await this.finalize(claim, {
          kind: 'failed',
          reason: 'internal_error',
          message: e instanceof Error ? e.message : String(e),
          errorCode: 'internal_error',
        });
      } catch (e2) {
        if (!(e2 instanceof LeaseFencedError)) throw e2;
        return 'fenced';
      }
      return 'finished';
    } finally {
      clearInterval(heartbeat);
      shutdown.removeEventListener('abort', onShutdown);
    }
  }

  /** A stop that is not a terminal outcome: release on shutdown, finalize on cancel, vanish when fenced. */
  private async stop(claim: RunClaim, signal: AbortSignal): Promise<RunLoopResult> {
    const reason = stopReasonOf(signal) ?? 'shutdown';
    try {
      if (reason === 'abandon') return 'abandoned';
      if (reason === 'fenced') return 'fenced';
      if (reason === 'cancelled') {
        await this.finalize(claim, { kind: 'cancelled', reason: 'cancel requested' });
        return 'finished';
      }
      await this.append(claim, [
        {
          type: 'run.released',
          runId: claim.runId,
          actorType: 'worker',
          data: { workerId: claim.workerId, reason: 'worker shutting down' },
        },
      ]);
      return 'released';
    } catch (e) {
      if (e instanceof LeaseFencedError) return 'fenced';
      throw e;
    }
  }

  private append(claim: RunClaim, events: NewEvent[], checkpoint?: KnownCheckpoint, condition?: WriteCondition) {
    // Checkpoints the lease queued are saved by this write too: each gets its `checkpoint.save`.
    const queued = (this.leases.get(claim)?.queuedCheckpoints ?? []).map((c) => ({
      version: c.version,
      phase: c.state.phase,
      step: c.state.step,
    }));
    return this.telemetry.checkpointsSavedBy(claim.runId, queued, () => {
      if (checkpoint) {
        const cp = this.withContextRef(claim, checkpoint);
        const { version, state } = cp;
        const write = () => this.appendTraced(claim, events, cp, condition);
        return this.telemetry.checkpointSave(claim.runId, { version, phase: state.phase, step: state.step }, write);
      }
      return this.appendTraced(claim, events, undefined, condition);
    });
  }

  /** Every checkpoint carries the latest compaction reference of the run's builds (ADR 0017). */
  private withContextRef(claim: RunClaim, checkpoint: KnownCheckpoint): KnownCheckpoint {
    const ref = this.contextRefs.get(claim) ?? this.leases.get(claim)?.checkpoint?.state.context;
    if (!ref || checkpoint.state.context !== undefined) return checkpoint;
    return { ...checkpoint, state: { ...checkpoint.state, context: ref } };
  }

  /**
   * A fenced append of the run's events (with whatever the lease scope has queued before them),
   * stamped with the active trace id. Before the scope exists (the run row is not read yet) it is a
   * plain fenced append.
   */
  private appendTraced(claim: RunClaim, events: NewEvent[], checkpoint?: KnownCheckpoint, condition?: WriteCondition) {
    const tap = this.deps.onCommitted;
    const written = this.appendFenced(claim, events, checkpoint, condition);
    if (!tap) return written;
    return written.then(async (result) => {
      if (result) await tap(result.events);
      return result;
    });
  }

  private appendFenced(claim: RunClaim, events: NewEvent[], checkpoint?: KnownCheckpoint, condition?: WriteCondition) {
    const lease = this.leases.get(claim);
    if (lease) return lease.write(withTraceId(events), checkpoint, condition);
    return this.deps.store.append(claim.sessionId, withTraceId(events), {
      tenantId: claim.tenantId,
      fence: { runId: claim.runId, leaseEpoch: claim.leaseEpoch },
      // Without a lease there is no run row or sequence to judge `'current'` on.
      ...(typeof condition === 'number' ? { expectedSequence: condition } : {}),
      checkpoint: checkpoint
        ? {
            runId: claim.runId,
            version: checkpoint.version,
            state: checkpoint.state as unknown as Record<string, unknown>,
          }
        : undefined,
    });
  }

  private async loop(claim: RunClaim, signal: AbortSignal): Promise<Outcome | 'stopped' | 'suspended'> {
    const { deps } = this;
    // What the claim read with its lock (exact at its commit); read here only when it did not.
    const preloaded = claim.preloaded;
    let run = preloaded ? preloaded.run : await deps.runs.get(claim.runId, null);
    if (!run || isTerminal(run.status)) return 'stopped';
    const agent = await this.agents.get(run.agentId, run.agentVersion, preloaded?.operatorGrants);
    if (!agent)
      return {
        kind: 'failed',
        reason: 'internal_error',
        message: `agent ${run.agentId} v${run.agentVersion} is not defined`,
        errorCode: 'not_found',
      };
    this.telemetry.annotateRun({ id: agent.id, version: agent.version });
    const principal = deps.principalFor(run);
    let route;
    try {
      route = deps.router.resolve(run.modelPolicy);
    } catch (e) {
      return {
        kind: 'failed',
        reason: 'model_permanent_error',
        message: (e as Error).message,
        errorCode: 'configuration_error',
      };
    }
    const computeTools = () =>
      deps.registry.definitionsFor(
        enabledToolNames(
          agent,
          deps.registry.list().map((t) => t.spec.name),
        ),
        principal.scopes,
      );
    const toolSpecs = deps.sessionTools
      ? deps.sessionTools.get(
          claim.sessionId,
          // A replaced grant is a new key: the session then sees the tools its new grant allows.
          `${agent.id}@${agent.version}:${[...principal.scopes].sort().join(',')}:${JSON.stringify(mcpGrantsOf(agent))}`,
          computeTools,
        )
      : computeTools();

    // The skill catalog is fixed for the process (read at startup), so it is the same for every run of a session.
    const skills = (deps.skills?.list() ?? []).filter((sk) => skillEnabled(agent, sk.name));

    // Resume point: the latest checkpoint when it is for the current step; otherwise the log decides.
    const cp = preloaded ? preloaded.checkpoint : await deps.checkpoints.latest(claim.runId);
    // The session's latest events, read by the claim: the first build need not read the log when
    // they continue (or, for a new session, start) the context engine's fold.
    const tail = preloaded?.sessionTail ?? [];
    this.context.noteRead(claim.sessionId, tail);
    const claimedThrough = tail.length > 0 ? tail[tail.length - 1].sequence : null;
    // From here on the loop tracks its run row and checkpoint from its own writes (lease-scope.ts).
    const lease = new LeaseScope(
      deps.store,
      claim,
      run,
      cp ? { version: cp.version, state: cp.state } : null,
      preloaded?.hasToolInvocations ?? true,
      claimedThrough,
      // The run's own events continue the context engine's fold, so the next step's build need not
      // read back what this lease just wrote (one round trip per step; ADR 0013).
      (events) => this.context.noteAppended(claim.sessionId, events),
    );
    this.leases.set(claim, lease);
    let checkpointVersion = cp?.version ?? 0;
    let step = run.stepCount;
    let pending: { calls: readonly ToolCallItem[]; malformed: CheckpointState['malformedToolCalls'] } | null = null;
    if (cp && cp.state.step === step && cp.state.phase === 'model_completed') {
      pending = { calls: cp.state.pendingToolCalls, malformed: cp.state.malformedToolCalls };
    } else if (step > 0 && !(cp && cp.state.step === step && cp.state.phase === 'tools_completed')) {
      step -= 1; // the model call of `step` has no checkpoint: do it again (same step number)
    }
    // Where this run's conversation starts in the session log: kept by every checkpoint, else the
    // run's first event (read by the claim, or here once per lease).
    const runStart =
      cp?.state.conversationRange.fromSequence ??
      preloaded?.firstSequence ??
      (await this.firstSequenceOfRun(claim, principal));
    const firstSequence = (): number => runStart;

    // The step's checkpoint while it waits to ride with the next model call's start.
    let deferred: { events: NewEvent[]; checkpoint: KnownCheckpoint } | null = null;
    const flushDeferred = async (): Promise<void> => {
      if (!deferred) return;
      const d = deferred;
      deferred = null;
      await this.append(claim, d.events, d.checkpoint);
    };
    for (;;) {
      if (pending) {
        // `pending` is always reassigned after the next model call before it is read again.
        const r = await this.runTools(claim, run, agent, principal, step, pending, signal);
        if (r && typeof r === 'object' && 'kind' in r && r.kind === 'suspend') {
          // A cancel requested while the tools ran wins over waiting for a human.
          if ((await deps.runs.get(claim.runId, null))?.cancelRequestedAt)
            return { kind: 'cancelled', reason: 'cancel requested' };
          await this.suspend(claim, step, r);
          return 'suspended';
        }
        if (r) return r;
        // The tool loop goes on: keep the provider's opaque reasoning for the next request (§10.6).
        const continuation = lease.checkpoint?.state.providerContinuation ?? null;
        // The step's checkpoint waits for the next model call's start and is committed with it, in
        // one write (nothing external happens in between: the next build only computes). Any way
        // out before that start writes it on its own first, exactly as it was written before.
        deferred = {
          events: [
            {
              type: 'run.checkpointed',
              runId: claim.runId,
              actorType: 'worker',
              data: { checkpointVersion: checkpointVersion + 1, step },
            },
          ],
          checkpoint: {
            version: ++checkpointVersion,
            state: this.state(step, 'tools_completed', [], [], firstSequence(), continuation),
          },
        };
      }
      step += 1;
      // As the last write left it. A cancel request appended since shows up in the row the next
      // write returns (it re-reads), which the loop checks again before calling the model.
      run = lease.run;
      const gate = this.checkBeforeModelCall(run, step, signal);
      if (gate) {
        await flushDeferred();
        return gate;
      }

      let turn: ModelTurn | null = null;
      // The response's event and checkpoint: written before the tools run, or with the terminal outcome.
      let response: { event: NewEvent<'model.response.completed'>; checkpoint: KnownCheckpoint } | null = null;
      for (let attempt = 1; turn === null; attempt++) {
        // `run` was re-read at the top of this step; earlier attempts of this step are not in it yet.
        if (run.modelCallCount + (attempt - 1) >= run.limits.maxModelCalls) {
          await flushDeferred();
          return {
            kind: 'failed',
            reason: 'max_model_calls_exceeded',
            message: `run reached its limit of ${run.limits.maxModelCalls} model calls`,
            errorCode: 'budget_exceeded',
          };
        }
        const attemptId = deps.ids.uuid();
        // The context engine reads only what the session log gained since its last build (plan §11, §27.4).
        let built: BuiltContext;
        try {
          // Read here, where `run` is narrowed; the span only wraps the build itself.
          const inputs: ContextBuildInputs = {
            sessionId: claim.sessionId,
            agent: { ...agent, modelPolicy: run.modelPolicy },
            principal,
            runId: claim.runId,
            userMessageId: run.userMessageId,
            step,
            tools: toolSpecs,
            nowIso: deps.clock.nowIso(),
            attemptId,
            model: route.model,
            newId: () => deps.ids.uuid(),
            skills: deps.skills ? skills : undefined,
            resume: lease.checkpoint?.state.context ?? null,
            knownSequence: lease.appendedThrough ?? claimedThrough,
            // The tool results and checkpoint this build's start will commit are not in the log yet.
            pending: deferred
              ? deps.store.asPending(claim.sessionId, claim.tenantId, [...lease.queuedEvents, ...deferred.events])
              : undefined,
          };
          built = await this.telemetry.contextBuild(step, () => this.context.build(inputs));
          if (built.checkpoint) this.contextRefs.set(claim, built.checkpoint);
        } catch (e) {
          if (!(e instanceof ContextOverflow || e instanceof ContextBuildError)) {
            // The loop crashes; the step's checkpoint is still recorded first, as it was before.
            await flushDeferred().catch(() => undefined);
            throw e;
          }
          await flushDeferred();
          const overflow = e instanceof ContextOverflow;
          return {
            kind: 'failed',
            reason: overflow ? 'context_overflow' : 'internal_error',
            message: e.message,
            errorCode: e.code,
          };
        }
        const request = built.request;
        const modelCallId = deps.ids.uuid();
        const recordFailure = (errorCode: string, message: string, retryable: boolean, latencyMs: number) =>
          this.append(claim, [
            {
              type: 'model.request.failed',
              runId: claim.runId,
              actorType: 'worker',
              data: { modelCallId, step, attempt, errorCode, message, retryable, latencyMs },
            },
          ]);
        const riding: { events: NewEvent[]; checkpoint: KnownCheckpoint } | null = deferred;
        deferred = null;
        const notStarted = await this.startModelCall(
          claim,
          principal,
          signal,
          { events: [...(riding?.events ?? []), ...built.events], checkpoint: riding?.checkpoint },
          {
            type: 'model.request.started',
            runId: claim.runId,
            actorType: 'worker',
            data: {
              modelCallId,
              step,
              attempt,
              provider: route.model.provider,
              model: route.model.model,
              prefixHash: request.prefixHash,
              // v2: which provider profile (and registry) this call was routed by; null for fake/demo.
              profileName: route.model.profileVersion === undefined ? null : route.model.provider,
              profileVersion: route.model.profileVersion ?? null,
              registryVersion: route.model.registryVersion ?? null,
              context: built.record,
            },
          },
        );
        if (notStarted) return notStarted;
        // Only a start written without the sequence condition (a lease that knows no sequence yet)
        // can find a cancel request here: the call is recorded as not made.
        if (lease.run.cancelRequestedAt) {
          await recordFailure('aborted', 'model call not made (cancel requested)', false, 0);
          return { kind: 'cancelled', reason: 'cancel requested' };
        }
        // The active tool loop's provider-opaque continuation rides along only to the provider that made it (plan §10.6).
        const continuation = lease.checkpoint?.state.providerContinuation ?? null;
        const providerRequest = withProviderContinuation(request, continuation, route.model.provider);
        const t0 = deps.clock.nowMs();
        try {
          if (providerRequest.tools.length > 0 && !route.capabilities.toolCalling) {
            throw new ModelPermanentError(
              `model "${route.model.model}" of provider "${route.model.provider}" lacks tool_calling, which this agent's tools need`,
              { missing: ['tool_calling'] },
            );
          }
          const deadlineMs = run.deadlineAt ? Date.parse(run.deadlineAt) : null;
          turn = await this.telemetry.modelInvoke(route.model, { step, attempt, signal }, (observe) =>
            assembleTurn(
              observe(
                route.provider.stream(providerRequest, route.model, {
                  attemptId,
                  attemptNumber: attempt,
                  deadlineMs,
                  signal,
                }),
              ),
              // Not awaited: the stream never waits for a preview's NOTIFY (the publisher keeps a
              // run's deltas in order and joins those that arrive while one is being sent).
              (d) => {
                void deps.transient
                  .publish({ sessionId: claim.sessionId, runId: claim.runId, kind: d.type, text: d.text })
                  .catch(() => undefined);
              },
            ),
          );
        } catch (e) {
          const latencyMs = deps.clock.nowMs() - t0;
          if (signal.aborted) {
            const why = stopReasonOf(signal);
            if (why !== 'fenced' && why !== 'abandon') {
              await recordFailure('aborted', `model call aborted (${why ?? 'shutdown'})`, true, latencyMs);
            }
            return 'stopped';
          }
          const c = classifyModelError(e);
          // The adapters scrub keys and bearer tokens from provider messages before they get here.
          deps.log.warn('model call failed', {
            runId: claim.runId,
            provider: route.model.provider,
            model: route.model.model,
            step,
            attempt,
            errorCode: c.code,
            retryable: c.retryable,
            message: c.message,
            latencyMs,
          });
          await recordFailure(c.code, c.message, c.retryable, latencyMs);
          // A provider's retry-after (429/503) is honoured; the deadline check below still bounds it.
          const retryAfter = (e as { details?: { retryAfterMs?: unknown } }).details?.retryAfterMs;
          const wait = Math.max(
            backoffMs(attempt, this.settings.retryBaseMs, this.settings.retryMaxMs, deps.ids.random()),
            typeof retryAfter === 'number' ? retryAfter : 0,
          );
          const deadlineMs = run.deadlineAt ? Date.parse(run.deadlineAt) : Infinity;
          if (!c.retryable || attempt >= this.settings.maxModelAttempts || deps.clock.nowMs() + wait >= deadlineMs) {
            return { kind: 'failed', reason: c.reason, message: c.message, errorCode: c.code };
          }
          await deps.clock.sleep(wait, signal).catch(() => undefined);
          if (signal.aborted) return 'stopped';
          continue;
        }
        const latencyMs = deps.clock.nowMs() - t0;
        // Plan §6.5 precedence: provider-reported cost > provider usage API > catalog price >
        // pricing snapshot > configured override (the last three resolved by the router) > free.
        const usageApiCost =
          turn.providerCost === undefined
            ? await this.usageApiCost(route, turn, {
                attemptId,
                attemptNumber: attempt,
                deadlineMs: run.deadlineAt ? Date.parse(run.deadlineAt) : null,
                signal,
              })
            : null;
        const priced = priceModelCall(
          turn.usage,
          { providerResponse: turn.providerCost, providerUsageApi: usageApiCost },
          route.billing,
        );
        const loopContinues = turn.toolCalls.length > 0 || turn.malformedToolCalls.length > 0;
        deps.log.debug('model call completed', {
          runId: claim.runId,
          provider: route.model.provider,
          model: route.model.model,
          profileVersion: route.model.profileVersion ?? null,
          step,
          attempt,
          stopReason: turn.stopReason,
          toolCalls: turn.toolCalls.length,
          usage: turn.usage,
          cost: priced.cost,
          costSource: priced.costSource,
          latencyMs,
        });
        response = {
          event: {
            type: 'model.response.completed',
            runId: claim.runId,
            actorType: 'worker',
            data: {
              modelCallId,
              step,
              attempt,
              stopReason: turn.stopReason,
              usage: turn.usage,
              cost: priced.cost,
              costSource: priced.costSource,
              toolCalls: turn.toolCalls.map((c) => ({ callId: c.callId, name: c.name })),
              textLength: turn.text.length,
              latencyMs,
            },
          },
          checkpoint: {
            version: checkpointVersion + 1,
            // Kept only while the tool loop goes on; a final answer ends the loop and drops it.
            state: this.state(
              step,
              'model_completed',
              turn.toolCalls,
              turn.malformedToolCalls,
              firstSequence(),
              loopContinues && turn.reasoningItems.length
                ? { provider: route.model.provider, items: turn.reasoningItems }
                : null,
            ),
          },
        };
      }
      const toolLoop = turn.toolCalls.length > 0 || turn.malformedToolCalls.length > 0;
      // Tool calls that are all pure computations (the calculator, the clock): nothing external
      // happens before the next model call's start, so the response and its checkpoint are
      // committed with the calls' results and that start, in one write (ADR 0013, session 8).
      const pureCalls =
        toolLoop &&
        !signal.aborted &&
        turn.malformedToolCalls.length === 0 &&
        turn.toolCalls.every((c) => {
          const spec = deps.registry.get(c.name)?.spec;
          return spec !== undefined && isPureComputation(spec);
        });
      let leading: Outcome['leading'];
      if (pureCalls) {
        checkpointVersion = response!.checkpoint.version;
        lease.defer(withTraceId([response!.event]), this.withContextRef(claim, response!.checkpoint));
        run = { ...lease.run, usage: usageAfterResponse(lease.run, response!.event.data, deps.clock.nowIso()) };
      } else if (toolLoop || signal.aborted) {
        // Durable before any tool runs (its checkpoint holds the calls), or before a stop.
        checkpointVersion = response!.checkpoint.version;
        await this.append(claim, [response!.event], response!.checkpoint);
        run = lease.run;
      } else {
        // The loop ends here whatever the checks below decide: the response is written with the
        // terminal outcome, in the same order, in one commit; the budgets see its usage already.
        leading = { events: [response!.event], step, fromSequence: firstSequence() };
        run = { ...lease.run, usage: usageAfterResponse(lease.run, response!.event.data, deps.clock.nowIso()) };
      }
      const budget = this.checkTokenBudgets(run);
      if (budget) return { ...budget, leading };
      if (signal.aborted) return 'stopped';
      if (toolLoop) {
        pending = { calls: turn.toolCalls, malformed: turn.malformedToolCalls };
        continue;
      }
      if (turn.text.trim() === '') {
        return {
          kind: 'failed',
          reason: 'empty_model_turn',
          message: 'the model returned neither text nor tool calls',
          errorCode: 'model_protocol_error',
          leading,
        };
      }
      // The answer is committed whole with the terminal write next: previews not sent yet are moot.
      deps.transient.supersede(claim.sessionId, claim.runId);
      return { kind: 'completed', text: turn.text, leading };
    }
  }

  /**
   * Commits a model call's start after `carried` (what rides with it: the step's checkpoint and the
   * build's `context.compacted`; the lease's queued events go first) unless a cancel was requested
   * since the loop decided to call the model (`appendUnlessCancelled`): the start is refused rather
   * than recorded and then marked as not made. When refused, `carried` is queued for the run's next
   * write (the terminal one). Returns null once the start is committed.
   */
  private async startModelCall(
    claim: RunClaim,
    principal: Principal,
    signal: AbortSignal,
    carried: { events: NewEvent[]; checkpoint?: KnownCheckpoint },
    start: NewEvent<'model.request.started'>,
  ): Promise<Outcome | 'stopped' | null> {
    const refused = await this.appendUnlessCancelled(
      claim,
      principal,
      signal,
      [...carried.events, start],
      carried.checkpoint,
    );
    if (refused === null) return null;
    this.leases
      .get(claim)!
      .defer(
        withTraceId(carried.events),
        carried.checkpoint ? this.withContextRef(claim, carried.checkpoint) : undefined,
      );
    return refused === 'stopped' ? 'stopped' : { kind: 'cancelled', reason: 'cancel requested' };
  }

  /**
   * Commits `events` (after the lease's queued ones) in one fenced append that is also conditional
   * (`'current'`, lease-scope.ts): not sent at all when the run row the lease's last write returned
   * has a cancel request, and refused by the store unless the session's last sequence is where that
   * write (or the claim) left it. The loop decided to go on (call the model, start a tool with an
   * effect) on that row, so the condition is what makes the decision exact: a cancel requested
   * since (while a model call streamed, while a tool ran) is either in the row already or has
   * advanced the session's sequence. No round trip is added when nothing else was appended (the
   * append checks the sequence anyway).
   *
   * When refused by the sequence, the events appended since are read: a cancel of this run (or a
   * stop of the loop) returns `'cancelled'` (`'stopped'`) with nothing written and the lease's
   * queued events still queued; anything else (an `artifact.created`, or an event of this lease's
   * own parallel calls) and the write is tried again, conditional on the new last sequence.
   * Returns null once committed.
   */
  private async appendUnlessCancelled(
    claim: RunClaim,
    principal: Principal,
    signal: AbortSignal,
    events: NewEvent[],
    checkpoint?: KnownCheckpoint,
  ): Promise<'cancelled' | 'stopped' | null> {
    // The `'current'` condition is judged when the write is sent, at or after this sequence.
    let after = this.leases.get(claim)!.knownThrough;
    let condition: WriteCondition = 'current';
    for (;;) {
      try {
        await this.append(claim, events, checkpoint, condition);
        return null;
      } catch (e) {
        if (e instanceof CancelRequestedSince) return signal.aborted ? 'stopped' : 'cancelled';
        if (!(e instanceof ConcurrencyConflict) || after === null) throw e;
        const since = await this.deps.store.listAfter(claim.sessionId, after, principal);
        if (since.length === 0) throw e;
        after = since[since.length - 1].sequence;
        condition = after;
        if (signal.aborted) return 'stopped';
        if (since.some((ev) => ev.type === 'run.cancel_requested' && ev.runId === claim.runId)) return 'cancelled';
      }
    }
  }

  private async runTools(
    claim: RunClaim,
    run: RunRecord,
    agent: AgentSpec,
    principal: Principal,
    step: number,
    pending: { calls: readonly ToolCallItem[]; malformed: CheckpointState['malformedToolCalls'] },
    signal: AbortSignal,
  ): Promise<Outcome | 'stopped' | Suspension | null> {
    const ctx = {
      runId: claim.runId,
      sessionId: claim.sessionId,
      step,
      agent,
      principal,
      signal,
      deadlineAt: run.deadlineAt,
    };
    const append = (events: NewEvent[]) => this.append(claim, events).then(() => undefined);
    const lease = this.leases.get(claim)!;
    const defer = (events: NewEvent[]) => lease.defer(withTraceId(events));
    // A tool with an effect starts only if no cancel was requested since the lease's last write
    // (the model response's, or the previous tool's): neither while the model call that proposed it
    // streamed nor while an earlier tool of the step ran (plan §2.5).
    const start = (events: NewEvent[]) => this.appendUnlessCancelled(claim, principal, signal, events);
    // Malformed calls become proposed calls whose arguments failed to parse; the model is told so.
    const calls: ToolCallItem[] = [
      ...pending.calls,
      ...pending.malformed.map((m) => ({
        kind: 'tool_call' as const,
        callId: m.callId,
        name: m.name,
        arguments: { _unparsed_arguments: m.raw.slice(0, 2000) },
      })),
    ];
    const parallel =
      calls.length > 1 &&
      calls.every((c) => {
        const spec = this.deps.registry.get(c.name)?.spec;
        return spec !== undefined && spec.allowParallel && spec.idempotency === 'read_only';
      });
    // The run row as the model response's append left it.
    let used = lease.run.toolCallCount;
    const guard = (): Outcome | 'stopped' | null => {
      if (signal.aborted) return 'stopped';
      if (used >= run.limits.maxToolCalls) {
        return {
          kind: 'failed',
          reason: 'max_tool_calls_exceeded',
          message: `run reached its limit of ${run.limits.maxToolCalls} tool calls`,
          errorCode: 'budget_exceeded',
        };
      }
      return null;
    };
    const handle = async (call: ToolCallItem, last: boolean): Promise<Outcome | 'stopped' | Suspension | null> => {
      // A call already proposed before a suspension or crash is not counted against the budget again.
      // Before the lease's first tool event, a run the claim found without invocations has none.
      const { existing, sameCall } = lease.mayHaveToolInvocations
        ? await this.pipeline.lookupCall(call, ctx)
        : { existing: null, sameCall: [] };
      if (!existing) {
        const g = guard();
        if (g) return g;
        used += 1;
      } else if (signal.aborted) return 'stopped';
      // The last call's result may wait for the step's checkpoint, which the loop writes next.
      const r = await this.pipeline.process(call, ctx, append, { existing, sameCall, defer, deferResult: last, start });
      if (r.kind === 'suspend') return r;
      if (r.kind === 'stopped') return 'stopped';
      if (r.kind === 'cancelled') return { kind: 'cancelled', reason: 'cancel requested' };
      if (r.kind === 'loop_detected') {
        return {
          kind: 'failed',
          reason: 'loop_detected',
          message: `the model repeated the identical call ${r.toolName} without new evidence`,
          errorCode: 'loop_detected',
        };
      }
      return signal.aborted ? 'stopped' : null;
    };
    if (parallel) {
      const results = await Promise.all(calls.map((c) => handle(c, false)));
      return results.find((r) => r !== null) ?? null;
    }
    for (const [i, call] of calls.entries()) {
      // What the previous call queued is committed before this one reads the tool records (the
      // first call's lookup depends on nothing queued: at most the model response is).
      if (i > 0) await this.append(claim, []);
      const r = await handle(call, i === calls.length - 1);
      if (r) return r;
    }
    return null;
  }

  /**
   * The cost from the provider's usage API (plan §6.5 step 2), when its adapter implements the
   * hook (none does yet: it needs a network call per provider). Bounded to a few seconds and never
   * fatal: a failure, timeout or null leaves the call to the next source of the precedence.
   */
  /** The sequence of the run's first event: where its conversation starts when no checkpoint says so. */
  private async firstSequenceOfRun(claim: RunClaim, principal: Principal): Promise<number> {
    const events = await this.deps.store.listRunEvents(claim.runId, principal, 0);
    return events[0]?.sequence ?? 0;
  }

  private async usageApiCost(route: ModelRoute, turn: ModelTurn, attempt: ModelAttempt): Promise<string | null> {
    const api = route.provider.usageApi;
    if (!api) return null;
    const signal = AbortSignal.any([
      attempt.signal ?? new AbortController().signal,
      AbortSignal.timeout(USAGE_API_TIMEOUT_MS),
    ]);
    try {
      return await api.costOf(
        { model: route.model, attempt, usage: turn.usage, providerMetadata: turn.providerMetadata },
        signal,
      );
    } catch (e) {
      this.deps.log.warn('provider usage API lookup failed; pricing from the next source', {
        provider: route.model.provider,
        model: route.model.model,
        error: e instanceof Error ? e.name : 'unknown',
      });
      return null;
    }
  }

  private checkBeforeModelCall(run: RunRecord, step: number, signal: AbortSignal): Outcome | 'stopped' | null {
    if (signal.aborted) return 'stopped';
    if (run.cancelRequestedAt) return { kind: 'cancelled', reason: 'cancel requested' };
    if (run.deadlineAt && this.deps.clock.nowMs() >= Date.parse(run.deadlineAt)) {
      return {
        kind: 'failed',
        reason: 'deadline_exceeded',
        message: `run passed its deadline ${run.deadlineAt}`,
        errorCode: 'deadline_exceeded',
      };
    }
    if (step > run.limits.maxSteps) {
      return {
        kind: 'failed',
        reason: 'max_steps_exceeded',
        message: `run reached its limit of ${run.limits.maxSteps} steps`,
        errorCode: 'budget_exceeded',
      };
    }
    return null;
  }

  private checkTokenBudgets(run: RunRecord): Outcome | null {
    const { limits, usage } = run;
    if (limits.maxInputTokens !== null && totalInputTokens(usage) > limits.maxInputTokens) {
      return {
        kind: 'failed',
        reason: 'token_budget_exceeded',
        message: `input tokens ${totalInputTokens(usage)} exceed ${limits.maxInputTokens}`,
        errorCode: 'budget_exceeded',
      };
    }
    if (limits.maxOutputTokens !== null && usage.outputTokens > limits.maxOutputTokens) {
      return {
        kind: 'failed',
        reason: 'token_budget_exceeded',
        message: `output tokens ${usage.outputTokens} exceed ${limits.maxOutputTokens}`,
        errorCode: 'budget_exceeded',
      };
    }
    if (limits.maxCost !== null && Number(usage.cost) > Number(limits.maxCost)) {
      return {
        kind: 'failed',
        reason: 'cost_budget_exceeded',
        message: `cost ${usage.cost} exceeds ${limits.maxCost}`,
        errorCode: 'budget_exceeded',
      };
    }
    return null;
  }

  private state(
    step: number,
    phase: CheckpointState['phase'],
    calls: readonly ToolCallItem[],
    malformed: CheckpointState['malformedToolCalls'],
    fromSequence: number,
    continuation: CheckpointState['providerContinuation'] = null,
  ): CheckpointState {
    return {
      schema: 1,
      step,
      phase,
      pendingToolCalls: calls,
      malformedToolCalls: malformed,
      providerContinuation: continuation,
      conversationRange: { fromSequence },
    };
  }

  /**
   * Parks the run for a human (plan §9.3, §27.3), in one fenced append and in this order: the
   * approval (or uncertainty) record, a checkpoint at the same resume point, then WAITING_*, which
   * clears the lease owner; the commit's NOTIFY is the event. The invocation was persisted earlier.
   */
  private async suspend(claim: RunClaim, step: number, s: Suspension): Promise<void> {
    const lease = this.leases.get(claim)!;
    // What the pipeline queued (the proposal) is persisted before the suspension's own append.
    await this.append(claim, []);
    const cp = lease.checkpoint;
    const version = (cp?.version ?? 0) + 1;
    const state: CheckpointState =
      cp && cp.state.step === step && cp.state.phase === 'model_completed'
        ? cp.state
        : this.state(step, 'model_completed', [], [], cp?.state.conversationRange.fromSequence ?? 0);
    await this.append(
      claim,
      [
        ...s.before,
        {
          type: 'run.checkpointed',
          runId: claim.runId,
          actorType: 'worker',
          data: { checkpointVersion: version, step },
        },
        s.wait,
      ],
      { version, state },
    );
  }

  /** The single terminal write of a run: the outcome event(s) and a terminal checkpoint, fenced. */
  private async finalize(claim: RunClaim, outcome: Outcome): Promise<void> {
    const runId = claim.runId;
    const base = { runId, actorType: 'worker' as const };
    const events: NewEvent[] =
      outcome.kind === 'completed'
        ? (() => {
            const messageId = this.deps.ids.uuid();
            return [
              { ...base, type: 'assistant.message.completed', data: { messageId, text: outcome.text } },
              { ...base, type: 'run.completed', data: { messageId } },
            ] as NewEvent[];
          })()
        : outcome.kind === 'failed'
          ? [
              {
                ...base,
                type: 'run.failed',
                data: { reason: outcome.reason, message: outcome.message, errorCode: outcome.errorCode },
              },
            ]
          : [{ ...base, type: 'run.cancelled', data: { reason: outcome.reason } }];
    const lease = this.leases.get(claim);
    const cp = lease ? lease.checkpoint : await this.deps.checkpoints.latest(runId);
    const prev = cp?.state;
    await this.append(claim, [...(outcome.leading?.events ?? []), ...events], {
      version: (cp?.version ?? 0) + 1,
      state: this.state(
        outcome.leading?.step ?? prev?.step ?? 0,
        'terminal',
        [],
        [],
        outcome.leading?.fromSequence ?? prev?.conversationRange.fromSequence ?? 0,
      ),
    });
    // The store clears the provider-opaque continuation (Anthropic thinking text, kept
    // chat_completions reasoning) from the run's older checkpoints in this same write (plan §10.6).
  }
}
