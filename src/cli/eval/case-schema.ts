import { EVENT_CATALOG } from '../../domain/events/catalog';
import { INTERVENTION_ACTIONS, TERMINAL_RUN_STATUSES } from './case-types';

/** Every persisted event type, for `at_event`, `event_order` and `event_counts`. */
const EVENT_TYPES = Object.keys(EVENT_CATALOG).sort();

/** The shape of a case file as written in YAML (snake_case, plan §20.1). */
export interface CaseFile {
  name: string;
  description: string;
  agent_id?: string;
  input: {
    text: string;
    repeat_with_same_idempotency_key?: boolean;
    preceding_turns?: { text: string; repeat?: number; model_fixture?: string }[];
  };
  model_fixture: string;
  limits?: {
    max_steps?: number;
    max_model_calls?: number;
    max_tool_calls?: number;
    max_input_tokens?: number | null;
    max_output_tokens?: number | null;
    max_cost?: string | null;
    deadline_seconds?: number | null;
  };
  interventions?: { at_event: string; occurrence?: number; action: string; text?: string }[];
  pending?: string;
  /** `trajectory` for a case made by `agent eval promote` from an exported run (plan §31.2); absent when authored. */
  source?: 'authored' | 'trajectory';
  source_run_id?: string;
  timeout_seconds?: number;
  expected: {
    terminal_status?: string;
    final_text_contains?: string[];
    final_text_matches?: string;
    tool_calls?: { name: string; count?: number; arguments_subset?: Record<string, unknown> }[];
    exact_tool_names?: string[];
    forbidden_tool_calls?: string[];
    maximum_steps?: number;
    maximum_model_calls?: number;
    maximum_tool_calls?: number;
    expected_error_code?: string;
    event_order?: string[];
    event_counts?: Record<string, number>;
    approval_requested?: boolean;
    approval_not_requested?: boolean;
    no_unauthorized_side_effects?: boolean;
    tool_executions?: Record<string, number>;
    artifacts?: { name: string; sha256?: string; media_type?: string }[];
    tool_result_trust?: Record<string, string>;
    context_within_limit?: boolean;
    context_compactions_at_least?: number;
    summary_provenance_valid?: boolean;
    conversation_replayable?: boolean;
    tool_executions_overlap?: string[];
    sse_replay_exact?: boolean;
    children?: {
      statuses?: string[];
      usage_summed?: boolean;
      budget_carved?: boolean;
      event_counts?: Record<string, number>;
    };
  };
}

const eventType = { type: 'string', enum: EVENT_TYPES };
const toolName = { type: 'string', pattern: '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$' };
const count = { type: 'integer', minimum: 0 };
const strings = { type: 'array', items: { type: 'string', minLength: 1 } };

/**
 * JSON Schema of a case file. `additionalProperties: false` everywhere: a misspelled assertion
 * would otherwise silently assert nothing, which is worse than a failing case.
 */
export const CASE_FILE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'description', 'input', 'model_fixture', 'expected'],
  properties: {
    name: { type: 'string', pattern: '^[a-z][a-z0-9_]*$' },
    description: { type: 'string', minLength: 1 },
    agent_id: { type: 'string', minLength: 1 },
    input: {
      type: 'object',
      additionalProperties: false,
      required: ['text'],
      properties: {
        text: { type: 'string', minLength: 1 },
        repeat_with_same_idempotency_key: { type: 'boolean' },
        preceding_turns: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['text'],
            properties: {
              text: { type: 'string', minLength: 1 },
              repeat: { type: 'integer', minimum: 1, maximum: 1000 },
              model_fixture: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]*$' },
            },
          },
        },
      },
    },
    model_fixture: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]*$' },
    limits: {
      type: 'object',
      additionalProperties: false,
      minProperties: 1,
      properties: {
        max_steps: { type: 'integer', minimum: 1 },
        max_model_calls: { type: 'integer', minimum: 1 },
        max_tool_calls: { type: 'integer', minimum: 0 },
        max_input_tokens: { type: ['integer', 'null'], minimum: 1 },
        max_output_tokens: { type: ['integer', 'null'], minimum: 1 },
        max_cost: { type: ['string', 'null'], pattern: '^[0-9]+(\\.[0-9]+)?$' },
        deadline_seconds: { type: ['number', 'null'], exclusiveMinimum: 0 },
      },
    },
    interventions: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['at_event', 'action'],
        properties: {
          at_event: eventType,
          occurrence: { type: 'integer', minimum: 1 },
          action: { type: 'string', enum: [...INTERVENTION_ACTIONS] },
          text: { type: 'string', minLength: 1 },
        },
      },
    },
    pending: { type: 'string', minLength: 1 },
    source: { type: 'string', enum: ['authored', 'trajectory'] },
    source_run_id: { type: 'string', minLength: 1 },
    timeout_seconds: { type: 'number', exclusiveMinimum: 0 },
    expected: {
      type: 'object',
      additionalProperties: false,
      minProperties: 1,
      properties: {
        terminal_status: { type: 'string', enum: [...TERMINAL_RUN_STATUSES] },
        final_text_contains: { ...strings, minItems: 1 },
        final_text_matches: { type: 'string', minLength: 1 },
        tool_calls: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name'],
            properties: { name: toolName, count, arguments_subset: { type: 'object' } },
          },
        },
        exact_tool_names: { type: 'array', items: toolName },
        forbidden_tool_calls: { type: 'array', items: toolName },
        maximum_steps: count,
        maximum_model_calls: count,
        maximum_tool_calls: count,
        expected_error_code: { type: 'string', minLength: 1 },
        event_order: { type: 'array', minItems: 1, items: eventType },
        event_counts: { type: 'object', propertyNames: eventType, additionalProperties: count },
        approval_requested: { type: 'boolean' },
        approval_not_requested: { type: 'boolean' },
        no_unauthorized_side_effects: { type: 'boolean' },
        tool_executions: { type: 'object', propertyNames: toolName, additionalProperties: count },
        tool_result_trust: {
          type: 'object',
          propertyNames: toolName,
          additionalProperties: { type: 'string', enum: ['internal_tool', 'user', 'external_untrusted'] },
        },
        context_within_limit: { type: 'boolean' },
        context_compactions_at_least: count,
        summary_provenance_valid: { type: 'boolean' },
        conversation_replayable: { type: 'boolean' },
        tool_executions_overlap: { type: 'array', minItems: 1, items: toolName },
        sse_replay_exact: { type: 'boolean' },
        children: {
          type: 'object',
          additionalProperties: false,
          properties: {
            statuses: { type: 'array', items: { type: 'string', enum: [...TERMINAL_RUN_STATUSES] } },
            usage_summed: { type: 'boolean' },
            budget_carved: { type: 'boolean' },
            event_counts: { type: 'object', propertyNames: eventType, additionalProperties: count },
          },
        },
        artifacts: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name'],
            properties: {
              name: { type: 'string', minLength: 1 },
              sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
              media_type: { type: 'string', minLength: 1 },
            },
          },
        },
      },
    },
  },
} as const;
