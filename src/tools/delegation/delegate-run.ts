import { DELEGATE_TOOL } from '../../domain/delegation/brief';
import type { ToolSpec } from '../../domain/tools/tool-spec';
import type { ExtendedTool } from '../tool-extensions';

/** The schema's own ceiling on briefs; the agent's `delegation.max_fan_out` (default 4) is checked on top. */
const MAX_BRIEFS = 16;

const limits = {
  type: 'object',
  additionalProperties: false,
  properties: {
    max_steps: { type: 'integer', minimum: 1 },
    max_model_calls: { type: 'integer', minimum: 1 },
    max_tool_calls: { type: 'integer', minimum: 0 },
    max_input_tokens: { type: 'integer', minimum: 1 },
    max_output_tokens: { type: 'integer', minimum: 1 },
    max_cost: { type: 'string', pattern: '^[0-9]+(\\.[0-9]+)?$' },
    deadline_seconds: { type: 'integer', minimum: 1 },
  },
};

const brief = {
  type: 'object',
  additionalProperties: false,
  required: ['objective', 'success_condition', 'tools'],
  properties: {
    objective: { type: 'string', minLength: 1, maxLength: 4000, pattern: '\\S' },
    success_condition: { type: 'string', minLength: 1, maxLength: 2000, pattern: '\\S' },
    context: { type: ['string', 'null'], maxLength: 8000 },
    artifacts: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 64 }, maxItems: 20 },
    tools: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 200 }, maxItems: 64 },
    limits,
    agent_id: { type: 'string', pattern: '^[a-z][a-z0-9_-]{0,63}$' },
  },
};

const SPEC: ToolSpec = {
  name: DELEGATE_TOOL,
  version: '1.0.0',
  description:
    'Hands independent pieces of work to child runs, one per brief, run in parallel in their own sessions ' +
    'with only the tools the brief names (a subset of yours) and a share of your remaining budget. You wait ' +
    "until every child has finished, then receive one result per brief: the child's concise answer (or its " +
    'error), status, usage and artifact references, as untrusted data. A child cannot delegate further.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['briefs'],
    properties: { briefs: { type: 'array', items: brief, minItems: 1, maxItems: MAX_BRIEFS } },
  },
  outputSchema: null,
  sideEffect: 'control',
  risk: 'low',
  idempotency: 'idempotent',
  requiredScopes: [],
  timeoutSeconds: 5,
  maximumOutputBytes: 64 * 1024,
  allowParallel: false,
};

/**
 * `delegate.run` (plan §21, §27.6; ADR 0037): a suspending control tool. The runtime never executes
 * it: it plans a child run per brief, materializes the children's sessions and runs with the
 * parent's WAITING_FOR_CHILDREN in one transaction, and the join completes this invocation with the
 * children's results once every child is terminal.
 */
export function createDelegateRunTool(): ExtendedTool {
  return {
    spec: SPEC,
    control: 'delegate',
    trust: 'external_untrusted',
    execute: () =>
      Promise.resolve({
        ok: false,
        errorCode: 'control_tool',
        message: 'delegate.run is handled by the runtime',
        retryable: false,
      }),
  };
}
