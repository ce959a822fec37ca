import type { RunLimits } from './run/limits';

/** An agent is configuration, not a subclass (plan §6.1). Persisted with its version before use. */
export interface AgentSpec {
  readonly id: string;
  readonly version: number;
  readonly name: string;
  readonly instructions: string;
  /** A model policy name resolved by the model router, e.g. `demo` or `fake:calculator_then_answer`. */
  readonly modelPolicy: string;
  readonly enabledTools: readonly string[];
  readonly enabledSkills: readonly string[];
  readonly policyProfile: string;
  readonly limits: RunLimits;
  readonly metadata: Readonly<Record<string, unknown>>;
}
