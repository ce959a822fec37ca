/**
 * The in-sandbox tool bridge (plan §8.5, issue 28): a program in the sandbox calls the agent's tools
 * through a narrow JSON-RPC over a unix socket bound into its sandbox; each call is checked against
 * the grant below and handed to a `BridgeToolInvoker`, which must put it through the same
 * validation, policy, approval and recording as a model's call.
 */

/** What one `sandbox.run_program` invocation may call through its bridge. */
export interface BridgeGrant {
  readonly runId: string;
  readonly sessionId: string;
  readonly tenantId: string;
  readonly principalId: string;
  /** The `sandbox.run_program` invocation the bridged calls belong to. */
  readonly parentInvocationId: string;
  /** Tools the run allows that are also bridge-callable; nothing else is reachable. */
  readonly tools: readonly string[];
  /** Calls the program may make in all. */
  readonly callBudget: number;
  /**
   * The run's tool pipeline for this program's calls (`ToolExecutionContext.callTool`); the
   * server's own invoker answers when it is absent (a tool run outside a run).
   */
  readonly invoke?: (call: BridgeCall) => Promise<BridgeCallOutcome>;
}

export interface BridgeCall {
  readonly grant: BridgeGrant;
  /** 1, 2, ... within the grant: with the parent invocation it names the call. */
  readonly sequence: number;
  readonly toolName: string;
  readonly arguments: Record<string, unknown>;
  readonly signal: AbortSignal;
}

export type BridgeCallOutcome =
  | { readonly ok: true; readonly output: Record<string, unknown> }
  | { readonly ok: false; readonly errorCode: string; readonly message: string };

/** Runs one bridged call through the tool pipeline (the runtime's hook; see docs/sandbox.md). */
export interface BridgeToolInvoker {
  invoke(call: BridgeCall): Promise<BridgeCallOutcome>;
}

/** One program's bridge: a socket the sandbox gets, its capability token, and what was called. */
export interface BridgeSession {
  readonly socketPath: string;
  readonly token: string;
  /** The calls made so far, in order (for the tool result). */
  calls(): readonly BridgeCallRecord[];
  /** Revokes the token and removes the socket. */
  close(): Promise<void>;
}

export interface BridgeCallRecord {
  readonly sequence: number;
  readonly toolName: string;
  readonly ok: boolean;
  readonly errorCode?: string;
  readonly latencyMs: number;
}

export interface ToolBridge {
  open(grant: BridgeGrant): Promise<BridgeSession>;
}
