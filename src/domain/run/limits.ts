/** Run limits of plan §6.5. Checked before and recorded after every model and tool operation. */
export interface RunLimits {
  readonly maxSteps: number;
  readonly maxModelCalls: number;
  readonly maxToolCalls: number;
  readonly maxInputTokens: number | null;
  readonly maxOutputTokens: number | null;
  /** Decimal string, or null for no cost ceiling. */
  readonly maxCost: string | null;
  /** Wall-clock budget from run start, in seconds; the deadline is fixed when the run first starts. */
  readonly deadlineSeconds: number | null;
}

export const DEFAULT_LIMITS: RunLimits = {
  maxSteps: 20,
  maxModelCalls: 20,
  maxToolCalls: 40,
  maxInputTokens: null,
  maxOutputTokens: null,
  maxCost: null,
  deadlineSeconds: 300,
};
