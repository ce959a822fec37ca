import { isToolEnabled, mcpGrantsOf } from '../../../domain/agent';
import { mcpArgumentRules } from '../../../domain/mcp-grants';
import { checkArgumentRules } from '../../../policy/argument-rules';
import { DELEGATE_TOOL } from '../../../domain/delegation/brief';
import type { Tool } from '../../../ports/tool';
import type { PolicyDecision } from '../../../policy/policy-engine';
import { extensionsOf, type ToolExtensions } from '../../../tools/tool-extensions';
import { deny, fail, type CallScope, type Done } from './call-scope';

/** A call that passed steps 1–6 of the pipeline, with its normalized arguments and policy decision. */
export interface Authorized {
  readonly kind: 'authorized';
  readonly tool: Tool;
  readonly ext: ToolExtensions;
  readonly args: Record<string, unknown>;
  readonly decision: PolicyDecision;
}

/**
 * Steps 1–6 of plan §8.3: resolve, enabled for the agent, principal scopes (unknown tools never get
 * further), validate (strict JSON Schema, unknown arguments refused), normalize (e.g. workspace
 * paths), policy (the agent's argument rules on an MCP tool, then the policy document) — evaluated on every pass, so an approved call is revalidated before it runs.
 * A refusal is recorded (queued) and the call is done.
 */
export async function authorize(s: CallScope): Promise<Authorized | Done> {
  const { call, ctx, tool } = s;
  if (!tool) return deny(s, 'unknown_tool', `no tool named "${call.name}" is registered`);
  if (ctx.allowedTools && !ctx.allowedTools.has(call.name))
    return deny(s, 'tool_not_in_brief', `tool "${call.name}" is not one of the tools this child run was given`);
  const enabled = call.name === DELEGATE_TOOL ? ctx.delegation !== undefined : isToolEnabled(ctx.agent, call.name);
  if (!enabled) return deny(s, 'tool_not_enabled', `tool "${call.name}" is not enabled for agent ${ctx.agent.id}`);
  // ADR 0032: `ctx.principal.scopes` is the run's recorded scope set, whoever holds the lease.
  const missing = tool.spec.requiredScopes.filter((sc) => !ctx.principal.scopes.has(sc));
  if (missing.length > 0)
    return deny(s, 'missing_scope', `the run's scope set lacks ${missing.join(', ')}, which ${call.name} requires`);
  s.startedMs = s.p.clock.nowMs();
  // A human's edit (approve with edits) replaces the model's arguments and goes through every check below.
  const checked = s.p.registry.validateArguments(call.name, s.editedArguments ?? call.arguments);
  if (!checked.ok) {
    const errors = checked.errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ');
    return fail(s, 'tool_validation_error', `invalid arguments for ${call.name}: ${errors}`, false);
  }
  const ext = extensionsOf(tool);
  let args = checked.value;
  if (ext.normalize) {
    const n = ext.normalize(args);
    if (!n.ok) return fail(s, n.errorCode, n.message, false);
    args = n.value;
  }
  // The agent's grant may constrain this MCP tool's arguments (docs/mcp.md "Argument rules").
  const rules = mcpArgumentRules(mcpGrantsOf(ctx.agent), call.name);
  const broken = rules ? checkArgumentRules(rules, args) : null;
  if (broken)
    return deny(
      s,
      'argument_rule',
      `argument ${broken.field} of ${call.name} breaks agent ${ctx.agent.id}'s argument rule: ${broken.message}`,
    );
  const decision = s.p.telemetry.policyEvaluate(tool.spec, () =>
    s.p.policy.evaluate({ spec: tool.spec, arguments: args }),
  );
  if (decision.decision === 'deny') return deny(s, decision.reasonCode, decision.explanation, decision.policyVersion);
  if (decision.modifiedArguments) args = decision.modifiedArguments;
  return { kind: 'authorized', tool, ext, args, decision };
}
