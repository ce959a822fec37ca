import type { ApprovalEditChecks, EditVerdict } from '../ports/approval-edits';
import type { PolicyEngine } from '../policy/policy-engine';
import { argumentsHash } from './canonical-arguments';
import type { ToolRegistry } from './registry';
import { closedArgumentsSchema } from './spec-checks';

/**
 * "Approve with edits" checks over the live registry and policy (ADR 0044): the same strict
 * schema the pipeline validates a model's call against, then the same policy evaluation. An edit
 * the policy denies (a hardline rule, a stricter rule for these arguments) is refused; one that
 * needs approval or less is covered by the human approving it.
 */
export class RegistryApprovalEditChecks implements ApprovalEditChecks {
  constructor(
    private readonly registry: ToolRegistry,
    private readonly policy: PolicyEngine,
  ) {}

  argumentsSchema(toolName: string): Record<string, unknown> | null {
    const tool = this.registry.get(toolName);
    return tool ? closedArgumentsSchema(tool.spec.inputSchema) : null;
  }

  check(toolName: string, original: Record<string, unknown>, edited: Record<string, unknown>): EditVerdict {
    const tool = this.registry.get(toolName);
    if (!tool) return { kind: 'unknown_tool' };
    const checked = this.registry.validateArguments(toolName, edited);
    if (!checked.ok) return { kind: 'invalid', issues: checked.errors };
    const decision = this.policy.evaluate({ spec: tool.spec, arguments: checked.value });
    if (decision.decision === 'deny')
      return { kind: 'denied', reasonCode: decision.reasonCode, explanation: decision.explanation };
    return { kind: 'ok', editedHash: argumentsHash(checked.value), originalHash: argumentsHash(original) };
  }
}
