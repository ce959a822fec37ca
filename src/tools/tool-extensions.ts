import type { LoadedSkill } from '../domain/deciders/tool-invocation';
import type { NewEvent, ToolResultTrust } from '../domain/events/payloads';
import type { Tool } from '../ports/tool';

/** Outcome of a tool's own argument normalization (plan §8.3 step 5), before policy. */
export type NormalizeResult =
  | { readonly ok: true; readonly value: Record<string, unknown> }
  | { readonly ok: false; readonly errorCode: string; readonly message: string };

/**
 * How the runtime labels a tool's result (plan §11.2): a fixed label, or `workspace_provenance` —
 * internal when this run wrote exactly that content, EXTERNAL_UNTRUSTED otherwise.
 */
export type TrustRule = ToolResultTrust | 'workspace_provenance';

/**
 * Optional capabilities a tool may add to the Tool port. Everything here is deterministic code
 * the runtime calls; none of it is a security boundary the model can talk its way around.
 */
export interface ToolExtensions {
  /** Step 5 of the pipeline: canonicalize arguments and refuse what can never be valid (e.g. paths outside the workspace). */
  normalize?(args: Record<string, unknown>): NormalizeResult;
  /** What the human is asked to approve, in words (default: the tool name and its arguments). */
  approvalSummary?(args: Record<string, unknown>): string;
  /** Default `internal_tool`. */
  readonly trust?: TrustRule;
  /** A control tool suspends the run instead of executing (plan §27.3; `delegate`: §27.6). */
  readonly control?: 'ask_user' | 'delegate';
  /**
   * The skill a `skill.load` result brought into the run: the tool invocation decider records it
   * with the completion (`CompleteToolCall.loadedSkill` → `run.skill.loaded`).
   */
  loadedSkill?(output: Record<string, unknown>): LoadedSkill | null;
  /**
   * Extra run events recorded in the same append as `tool.call.completed` (`run.skill.loaded`),
   * decided by the tool invocation decider. Superseded by `loadedSkill` once the pipeline completes
   * calls through the decider.
   */
  eventsFor?(output: Record<string, unknown>, invocationId: string): NewEvent[];
  /**
   * Retrieval traces (`memory.retrieved`, decided by the memory decider) recorded in the same
   * append as the call's `tool.call.completed` (ADR 0035).
   */
  tracesFor?(output: Record<string, unknown>, invocationId: string, runId: string | null): NewEvent[];
}

export type ExtendedTool = Tool & ToolExtensions;

export function extensionsOf(tool: Tool): ToolExtensions {
  return tool as ExtendedTool;
}
