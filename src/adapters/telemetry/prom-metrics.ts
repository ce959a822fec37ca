import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Metrics, ModelCallSample, RunEndStatus, ToolCallStatus } from '../../ports/metrics';

/** Seconds: model calls and runs take from milliseconds (demo) to minutes (reasoning models). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const RUN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600];

/**
 * The plan §19 metrics in one prom-client registry. Labels are bounded: provider and model come
 * from configuration, tool names from the tool registry, statuses and reasons from closed sets.
 */
export class PromMetrics implements Metrics {
  readonly registry = new Registry();
  private readonly runsTotal = this.counter('agent_runs_total', 'Runs started (first attempt)', []);
  private readonly runsCompleted = this.counter('agent_runs_completed_total', 'Runs that completed', []);
  private readonly runsFailed = this.counter('agent_runs_failed_total', 'Runs that failed, by failure reason', [
    'reason',
  ]);
  private readonly runsCancelled = this.counter('agent_runs_cancelled_total', 'Runs that were cancelled', []);
  private readonly runDuration = new Histogram({
    name: 'agent_run_duration_seconds',
    help: 'From the first start of a run to its terminal event, by terminal status',
    labelNames: ['status'],
    buckets: RUN_BUCKETS,
    registers: [this.registry],
  });
  private readonly modelCalls = this.counter('model_calls_total', 'Model calls, by provider, model and status', [
    'provider',
    'model',
    'status',
  ]);
  private readonly modelDuration = new Histogram({
    name: 'model_call_duration_seconds',
    help: 'Model call latency (request to the end of the stream), by provider, model and status',
    labelNames: ['provider', 'model', 'status'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly modelTtft = new Histogram({
    name: 'model_time_to_first_token_seconds',
    help: 'Seconds from a model request to its first streamed event, by provider and model',
    labelNames: ['provider', 'model'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly modelTokens = this.counter('model_tokens_total', 'Tokens by provider, model and token class', [
    'provider',
    'model',
    'class',
  ]);
  private readonly toolCalls = this.counter('tool_calls_total', 'Tool calls by tool and outcome', ['tool', 'status']);
  private readonly toolFailures = this.counter('tool_failures_total', 'Tool calls that failed, by tool', ['tool']);
  private readonly toolDurationH = new Histogram({
    name: 'tool_duration_seconds',
    help: 'Tool execution time, by tool and outcome',
    labelNames: ['tool', 'status'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly approvals = this.counter('approval_requests_total', 'Human approvals requested, by tool and kind', [
    'tool',
    'kind',
  ]);
  private readonly recoveries = this.counter(
    'run_recoveries_total',
    'Runs reclaimed after their worker stopped heartbeating (lease expired)',
    [],
  );
  private readonly budgets = this.counter('budget_exceeded_total', 'Runs stopped by a budget, by budget kind', [
    'kind',
  ]);

  private readonly mcpCalls = this.counter('mcp_calls_total', 'MCP tool and resource calls, by server and status', [
    'server',
    'status',
  ]);
  private readonly mcpRestarts = this.counter('mcp_server_restarts_total', 'MCP server restarts, by server', [
    'server',
  ]);
  private readonly mcpUp = new Gauge({
    name: 'mcp_server_up',
    help: 'Whether the MCP server is connected and ready (1) or not (0), by server',
    labelNames: ['server'],
    registers: [this.registry],
  });

  private counter<L extends string>(name: string, help: string, labelNames: L[]): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  runStarted(): void {
    this.runsTotal.inc();
  }

  runFinished(status: RunEndStatus, durationSeconds: number | null, failureReason: string | null): void {
    if (status === 'completed') this.runsCompleted.inc();
    else if (status === 'failed') this.runsFailed.inc({ reason: failureReason ?? 'unknown' });
    else this.runsCancelled.inc();
    if (durationSeconds !== null && durationSeconds >= 0) this.runDuration.observe({ status }, durationSeconds);
  }

  runRecovered(): void {
    this.recoveries.inc();
  }

  budgetExceeded(kind: string): void {
    this.budgets.inc({ kind });
  }

  modelCall(s: ModelCallSample): void {
    const labels = { provider: s.provider, model: s.model, status: s.status };
    this.modelCalls.inc(labels);
    this.modelDuration.observe(labels, s.durationSeconds);
    if (s.timeToFirstTokenSeconds !== null)
      this.modelTtft.observe({ provider: s.provider, model: s.model }, s.timeToFirstTokenSeconds);
    if (s.tokens)
      for (const [cls, n] of Object.entries(s.tokens))
        if (n > 0) this.modelTokens.inc({ provider: s.provider, model: s.model, class: cls }, n);
  }

  toolCall(tool: string, status: ToolCallStatus): void {
    this.toolCalls.inc({ tool, status });
    if (status === 'failed') this.toolFailures.inc({ tool });
  }

  toolDuration(tool: string, status: ToolCallStatus, seconds: number): void {
    this.toolDurationH.observe({ tool, status }, seconds);
  }

  approvalRequested(tool: string, kind: string): void {
    this.approvals.inc({ tool, kind });
  }

  mcpCall(server: string, status: string): void {
    this.mcpCalls.inc({ server, status });
  }

  mcpServerRestarted(server: string): void {
    this.mcpRestarts.inc({ server });
  }

  mcpServerUp(server: string, up: boolean): void {
    this.mcpUp.set({ server }, up ? 1 : 0);
  }

  /** The Prometheus text exposition of this registry. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

let processMetrics: PromMetrics | null = null;

/**
 * One registry per process: when the API and a worker share a process (tests, the CLI's in-process
 * worker) `GET /metrics` shows both.
 */
export function processPromMetrics(): PromMetrics {
  if (!processMetrics) {
    processMetrics = new PromMetrics();
    collectDefaultMetrics({ register: processMetrics.registry });
  }
  return processMetrics;
}
