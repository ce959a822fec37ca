/** The ToolSpec of plan §8.1 with the classification policy and recovery rely on. */
export type SideEffectClass = 'none' | 'read' | 'workspace_write' | 'external_write' | 'control';
export type RiskLevel = 'low' | 'medium' | 'high' | 'critical';
/**
 * How a tool may be retried after a crash (plan §8.4): read_only and idempotent retry;
 * conditional retries only with the idempotency key; non_idempotent past its watermark becomes UNCERTAIN.
 */
export type IdempotencyClass = 'read_only' | 'idempotent' | 'conditional' | 'non_idempotent';

export interface ToolSpec {
  /** Namespaced `domain.verb`, e.g. `math.calculate`. */
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly outputSchema: Record<string, unknown> | null;
  readonly sideEffect: SideEffectClass;
  readonly risk: RiskLevel;
  readonly idempotency: IdempotencyClass;
  readonly requiredScopes: readonly string[];
  readonly timeoutSeconds: number;
  readonly maximumOutputBytes: number;
  readonly allowParallel: boolean;
  /**
   * What the tool's provider said about its tools (an MCP server's `DiscoverResult.instructions`,
   * ADR 0051): untrusted text the context engine renders, quoted and labelled, in the tool region.
   */
  readonly serverNotes?: { readonly source: string; readonly text: string };
}

/**
 * A pure computation: no side effect and read-only (the calculator, the clock). Running it again
 * changes nothing anywhere, so nothing need be durable before it runs (ADR 0013): a crash before
 * its result is committed leaves the call unrecorded, and recovery makes it again.
 */
export function isPureComputation(spec: Pick<ToolSpec, 'sideEffect' | 'idempotency'>): boolean {
  return spec.sideEffect === 'none' && spec.idempotency === 'read_only';
}

export const TOOL_NAME_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;

/** Outcome of a tool execution as the runtime records it. */
export type ToolResult =
  | { readonly ok: true; readonly output: Record<string, unknown> }
  | { readonly ok: false; readonly errorCode: string; readonly message: string; readonly retryable: boolean };
