/**
 * The metrics port (plan §19 "Initial metrics"). The runtime records through it; the composition
 * root binds the Prometheus adapter (src/adapters/telemetry/prom-metrics.ts). Every label is
 * low-cardinality — provider, model, tool, status, token class, kind — never an id.
 */
export type RunEndStatus = 'completed' | 'failed' | 'cancelled' | 'interrupted';
export type ToolCallStatus = 'succeeded' | 'failed' | 'denied';
export type TokenClass = 'uncached_input' | 'cached_input' | 'cache_write' | 'output' | 'reasoning';

export interface ModelCallSample {
  readonly provider: string;
  readonly model: string;
  /** `ok`, or the classified error code (`rate_limited`, `aborted`, …; a bounded set). */
  readonly status: string;
  readonly durationSeconds: number;
  /** Seconds from the request to the first streamed event; null when nothing streamed. */
  readonly timeToFirstTokenSeconds: number | null;
  readonly tokens?: Readonly<Record<TokenClass, number>>;
}

export interface Metrics {
  /** agent_runs_total: a run's first attempt started. */
  runStarted(): void;
  /** agent_runs_completed_total / agent_runs_failed_total{reason} / agent_run_duration_seconds{status}. */
  runFinished(status: RunEndStatus, durationSeconds: number | null, failureReason: string | null): void;
  /** run_recoveries_total: a run reclaimed after its previous worker's lease expired. */
  runRecovered(): void;
  /** budget_exceeded_total{kind}. */
  budgetExceeded(kind: string): void;
  /** model_calls_total, model_call_duration_seconds, model_time_to_first_token_seconds, model_tokens_total. */
  modelCall(sample: ModelCallSample): void;
  /** tool_calls_total{tool,status} and, for `failed`, tool_failures_total{tool}. */
  toolCall(tool: string, status: ToolCallStatus): void;
  /** tool_duration_seconds{tool,status}: the execution itself (after validation, policy, approval). */
  toolDuration(tool: string, status: ToolCallStatus, seconds: number): void;
  /** approval_requests_total{tool,kind}. */
  approvalRequested(tool: string, kind: string): void;
  /** mcp_calls_total{server,status}: `ok`, or the MCP error code (`mcp_timeout`, …; a bounded set). */
  mcpCall(server: string, status: string): void;
  /** mcp_server_restarts_total{server}: a supervisor restarted its server (after a failure or by an operator). */
  mcpServerRestarted(server: string): void;
  /** mcp_server_up{server}: 1 while the server is connected and ready, else 0. */
  mcpServerUp(server: string, up: boolean): void;
}

/** Metrics a process also serves for scraping (`GET /metrics`, the worker's metrics port). */
export interface ExposedMetrics extends Metrics {
  /** The exposition's media type (Prometheus text format). */
  readonly contentType: string;
  render(): Promise<string>;
}

/** The MCP part of the port: what the MCP supervisors and tools record. */
export type McpMetrics = Pick<Metrics, 'mcpCall' | 'mcpServerRestarted' | 'mcpServerUp'>;

/** Records nothing (tests and callers that do not wire metrics). */
export const noopMetrics: Metrics = {
  runStarted: () => undefined,
  runFinished: () => undefined,
  runRecovered: () => undefined,
  budgetExceeded: () => undefined,
  modelCall: () => undefined,
  toolCall: () => undefined,
  toolDuration: () => undefined,
  approvalRequested: () => undefined,
  mcpCall: () => undefined,
  mcpServerRestarted: () => undefined,
  mcpServerUp: () => undefined,
};
