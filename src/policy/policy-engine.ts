import type { ToolSpec } from '../domain/tools/tool-spec';

export type PolicyDecisionType = 'allow' | 'deny' | 'require_approval' | 'allow_with_modifications';

export interface PolicyDecision {
  readonly decision: PolicyDecisionType;
  readonly reasonCode: string;
  readonly explanation: string;
  readonly modifiedArguments: Record<string, unknown> | null;
  readonly policyVersion: string;
}

export const DEFAULT_POLICY_VERSION = 'default-matrix@1';

/**
 * The deterministic default matrix of plan §9.2, keyed by the tool's declared side effect. The model
 * never decides: prompts and tool descriptions play no part here.
 */
export function evaluateDefaultPolicy(spec: ToolSpec): PolicyDecision {
  const d = (decision: PolicyDecisionType, reasonCode: string, explanation: string): PolicyDecision => ({
    decision,
    reasonCode,
    explanation,
    modifiedArguments: null,
    policyVersion: DEFAULT_POLICY_VERSION,
  });
  switch (spec.sideEffect) {
    case 'none':
      return d('allow', 'pure_computation', 'pure computation is allowed');
    case 'read':
      return d('allow', 'read_isolated', 'reading isolated resources is allowed');
    case 'workspace_write':
      return d('allow', 'write_workspace', 'writing the isolated workspace is allowed');
    case 'external_write':
      return d('require_approval', 'external_write', 'modifying external data requires human approval');
    case 'control':
      return d('allow', 'control_tool', 'control tools change only the run itself');
    default: {
      const never: never = spec.sideEffect;
      return d('deny', 'unknown_side_effect', `unknown side effect ${String(never)}`);
    }
  }
}
