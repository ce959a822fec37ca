import type { ToolSpec } from '../../domain/tools/tool-spec';
import type { ExtendedTool } from '../tool-extensions';

export const ASK_USER_TOOL = 'conversation.ask_user';

const SPEC: ToolSpec = {
  name: ASK_USER_TOOL,
  version: '1.0.0',
  description:
    "Asks the user a clarifying question and waits for the answer; the answer comes back as this tool's result " +
    '({"answer": "..."}). Use only when you cannot proceed without it.',
  inputSchema: {
    type: 'object',
    properties: {
      question: { type: 'string', minLength: 1, maxLength: 2000 },
      expected: { type: 'string', enum: ['free_text', 'choice'] },
      choices: { type: ['array', 'null'], items: { type: 'string', minLength: 1, maxLength: 200 }, maxItems: 20 },
      deadline_seconds: { type: ['integer', 'null'], minimum: 1 },
    },
    required: ['question'],
    additionalProperties: false,
  },
  outputSchema: null,
  sideEffect: 'control',
  risk: 'low',
  idempotency: 'idempotent',
  requiredScopes: [],
  timeoutSeconds: 5,
  maximumOutputBytes: 16 * 1024,
  allowParallel: false,
};

/**
 * `conversation.ask_user` (plan §27.3): a control tool. The runtime never executes it; it
 * checkpoints, moves the run to WAITING_FOR_USER and releases the lease. The answer arrives through
 * ProvideRunInputCommand as this invocation's result, labelled `user`.
 */
export function createAskUserTool(): ExtendedTool {
  return {
    spec: SPEC,
    control: 'ask_user',
    trust: 'user',
    execute: () =>
      Promise.resolve({
        ok: false,
        errorCode: 'control_tool',
        message: 'conversation.ask_user is handled by the runtime',
        retryable: false,
      }),
  };
}
