import { TASK_STATUSES } from '../../domain/context/working-state';
import type { ToolResult, ToolSpec } from '../../domain/tools/tool-spec';
import type { Tool } from '../../ports/tool';
import { parseWorkingState, PLAN_UPDATE_TOOL } from '../../context/working-state';

const text = { type: 'string', minLength: 1, maxLength: 500 };
const texts = { type: 'array', items: text, maxItems: 20 };

const SPEC: ToolSpec = {
  name: PLAN_UPDATE_TOOL,
  version: '1.0.0',
  description:
    'Replaces the structured working state of this conversation (objective, constraints, tasks, established ' +
    'facts, open questions, next action). It is shown back to you on every turn and survives when older ' +
    'messages are summarised. Send the complete state; omitted lists become empty.',
  inputSchema: {
    type: 'object',
    properties: {
      objective: { type: ['string', 'null'], maxLength: 500 },
      constraints: texts,
      tasks: {
        type: 'array',
        maxItems: 20,
        items: {
          type: 'object',
          properties: { description: text, status: { type: 'string', enum: [...TASK_STATUSES] } },
          required: ['description', 'status'],
          additionalProperties: false,
        },
      },
      establishedFacts: texts,
      openQuestions: texts,
      nextAction: { type: ['string', 'null'], maxLength: 500 },
    },
    additionalProperties: false,
  },
  outputSchema: null,
  sideEffect: 'none',
  risk: 'low',
  idempotency: 'idempotent',
  requiredScopes: [],
  timeoutSeconds: 5,
  maximumOutputBytes: 16 * 1024,
  allowParallel: false,
};

/**
 * `plan.update` (Milestone 7's optional internal plan tool). It stores nothing itself: its
 * `tool.call.completed` result `{workingState}` is the record, and the context engine's session
 * history folds the latest one into the working state rendered in Region B (newer than the latest
 * compaction's, which carries it forward).
 */
export function createPlanUpdateTool(): Tool {
  return {
    spec: SPEC,
    execute(args: Record<string, unknown>): Promise<ToolResult> {
      const state = parseWorkingState(args);
      if (!state) {
        return Promise.resolve({
          ok: false,
          errorCode: 'invalid_working_state',
          message: 'the working state does not have the documented shape',
          retryable: false,
        });
      }
      return Promise.resolve({ ok: true, output: { workingState: state } });
    },
  };
}
