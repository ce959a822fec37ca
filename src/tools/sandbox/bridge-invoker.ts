import { isPureComputation } from '../../domain/tools/tool-spec';
import type { Clock } from '../../ports/clock';
import type { BridgeCall, BridgeCallOutcome, BridgeToolInvoker } from '../../ports/tool-bridge';
import type { PolicyEngine } from '../../policy/policy-engine';
import type { ToolRegistry } from '../registry';
import { extensionsOf } from '../tool-extensions';

/** Which tools a program may call: bridge-callable ones (pure computations by default) among those given. */
export function bridgeCallable(
  registry: ToolRegistry,
  names: readonly string[],
  extra: readonly string[] = [],
): string[] {
  return names.filter((n) => {
    const t = registry.get(n);
    return t !== undefined && n !== 'sandbox.run_program' && (isPureComputation(t.spec) || extra.includes(n));
  });
}

/**
 * The bridge server's answer when the program's tool was not run by a run's tool pipeline (which
 * hands every program call to `ToolExecutionContext.callTool`): nothing would record or police the
 * call, so it is refused.
 */
export const OUTSIDE_A_RUN: BridgeToolInvoker = {
  invoke: () =>
    Promise.resolve({
      ok: false,
      errorCode: 'bridge_unavailable',
      message: "bridged tool calls run only inside a run's tool pipeline",
    }),
};

/**
 * A pipeline-less invoker for exercising the bridge server's transport on its own (test/int/sandbox/
 * tool-bridge.int.spec.ts): resolve, validate, normalize and policy, then the tool, recording
 * nothing; a call that needs approval is refused. Production programs use the run's pipeline.
 */
export class RegistryBridgeInvoker implements BridgeToolInvoker {
  constructor(
    private readonly registry: ToolRegistry,
    private readonly policy: PolicyEngine,
    private readonly clock: Clock,
  ) {}

  async invoke(call: BridgeCall): Promise<BridgeCallOutcome> {
    const tool = this.registry.get(call.toolName);
    if (!tool) return { ok: false, errorCode: 'unknown_tool', message: `no tool named "${call.toolName}"` };
    const checked = this.registry.validateArguments(call.toolName, call.arguments);
    if (!checked.ok)
      return {
        ok: false,
        errorCode: 'tool_validation_error',
        message: `invalid arguments for ${call.toolName}: ${checked.errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ')}`,
      };
    let args = checked.value;
    const ext = extensionsOf(tool);
    if (ext.normalize) {
      const n = ext.normalize(args);
      if (!n.ok) return { ok: false, errorCode: n.errorCode, message: n.message };
      args = n.value;
    }
    const decision = this.policy.evaluate({ spec: tool.spec, arguments: args });
    if (decision.decision === 'deny')
      return { ok: false, errorCode: decision.reasonCode, message: decision.explanation };
    if (decision.decision === 'require_approval')
      return {
        ok: false,
        errorCode: 'approval_required_via_bridge',
        message: `${call.toolName} needs a human's approval, which a bridged call cannot wait for yet; call it directly`,
      };
    if (decision.modifiedArguments) args = decision.modifiedArguments;
    const invocationId = `${call.grant.parentInvocationId}:bridge:${call.sequence}`;
    const r = await tool.execute(args, {
      runId: call.grant.runId,
      sessionId: call.grant.sessionId,
      tenantId: call.grant.tenantId,
      principalId: call.grant.principalId,
      invocationId,
      idempotencyKey: invocationId,
      clock: this.clock,
      signal: call.signal,
    });
    return r.ok ? { ok: true, output: r.output } : { ok: false, errorCode: r.errorCode, message: r.message };
  }
}
