import type { AgentSpec } from '../domain/agent';
import type { ToolResult, ToolSpec } from '../domain/tools/tool-spec';
import type { Clock } from './clock';
import type { BridgeCallOutcome } from './tool-bridge';

/** One call a program makes through the tool bridge, as the tool hands it to the run's pipeline. */
export interface BridgedToolCall {
  /** 1, 2, ... within the parent invocation. */
  readonly sequence: number;
  readonly toolName: string;
  readonly arguments: Record<string, unknown>;
  readonly signal: AbortSignal;
}

/**
 * How far a long call has come, as its provider reported it (an MCP server's `notifications/progress`;
 * ADR 0048): published live on the run's SSE stream as `tool.call.progress`, never stored.
 */
export interface ToolProgressReport {
  readonly progress: number;
  readonly total: number | null;
  /** The provider's own words: untrusted text, credential-scanned before it is published. */
  readonly message: string | null;
}

/** What a tool may know about the call it serves. Tools never call the model gateway. */
export interface ToolExecutionContext {
  readonly runId: string;
  readonly sessionId: string;
  readonly tenantId: string;
  readonly principalId: string;
  readonly invocationId: string;
  /** Application-generated idempotency key, passed through to external services that accept one. */
  readonly idempotencyKey: string;
  readonly clock: Clock;
  /** Aborted on timeout or cancellation. */
  readonly signal: AbortSignal;
  /** The run's wall-clock deadline (ISO-8601), when it has one; bounds a sandbox command's timeout. */
  readonly deadlineAt?: string | null;
  /** The run's agent (e.g. `skill.load` checks its skill catalog and tools); set by the pipeline. */
  readonly agent?: AgentSpec;
  /**
   * Runs a call a program of this invocation made through the tool bridge (plan §8.5) through the
   * run's tool pipeline — authorization, policy, recording as `tool.call.*` with `via: bridge` —
   * and answers its outcome. Set by the run loop's pipeline; absent elsewhere.
   */
  readonly callTool?: (call: BridgedToolCall) => Promise<BridgeCallOutcome>;
  /** Reports progress of this call live (a transient `tool.call.progress` frame). Set by the run loop's pipeline. */
  readonly progress?: (report: ToolProgressReport) => void;
}

export interface Tool {
  readonly spec: ToolSpec;
  /** Arguments have already been validated against `spec.inputSchema`. */
  execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolResult>;
}
