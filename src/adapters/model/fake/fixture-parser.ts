import type { ModelFailureKind, StopReason } from '../../../domain/model/model-events';
import type { FakeFailure, FakeFixture, FakeToolCall, FakeTurn, FakeUsage } from './fixture';

/**
 * Validates a parsed fixture document. Unknown keys are rejected so a typo such as `tool_call:`
 * fails loudly instead of silently producing a text-only turn.
 */

/** A fixture problem, with the path of the offending field (`turns[1].tool_calls[0].name`). */
export class FixtureFormatError extends Error {}

type Doc = Record<string, unknown>;

const FAILURE_KINDS: readonly ModelFailureKind[] = ['transient', 'permanent', 'protocol'];
const STOP_REASONS: readonly StopReason[] = [
  'end_turn',
  'tool_use',
  'max_tokens',
  'stop_sequence',
  'incomplete',
  'content_filter',
];
const USAGE_KEYS: Readonly<Record<string, keyof FakeUsage>> = {
  input: 'input',
  output: 'output',
  cached: 'cached',
  cache_write: 'cacheWrite',
  reasoning: 'reasoning',
};

/** Parses and validates one fixture; `expectedName` is its file name, which `name` must equal. */
export function parseFixture(document: unknown, expectedName: string): FakeFixture {
  const doc = object(document, 'fixture', ['name', 'description', 'latency_ms', 'context_limit', 'turns']);
  const name = string(doc.name, 'name');
  if (name !== expectedName)
    throw new FixtureFormatError(`name '${name}' does not match the file name '${expectedName}'`);
  if (!Array.isArray(doc.turns) || doc.turns.length === 0) {
    throw new FixtureFormatError('turns must be a non-empty list');
  }
  return {
    name,
    description: doc.description === undefined ? '' : string(doc.description, 'description', true),
    latencyMs: doc.latency_ms === undefined ? 0 : count(doc.latency_ms, 'latency_ms'),
    contextLimit: doc.context_limit === undefined ? null : positive(doc.context_limit, 'context_limit'),
    turns: doc.turns.map((turn: unknown, i) => parseTurn(turn, `turns[${i}]`)),
  };
}

function parseTurn(value: unknown, path: string): FakeTurn {
  const turn = object(value, path, [
    'text',
    'tool_calls',
    'fail_attempts',
    'malformed',
    'hang',
    'usage',
    'stop_reason',
    'expect_request_contains',
    'expect_request_excludes',
  ]);
  return {
    text: turn.text === undefined ? '' : string(turn.text, `${path}.text`, true),
    toolCalls: list(turn.tool_calls, `${path}.tool_calls`).map((c, i) => parseToolCall(c, `${path}.tool_calls[${i}]`)),
    failAttempts: list(turn.fail_attempts, `${path}.fail_attempts`).map((f, i) =>
      parseFailure(f, `${path}.fail_attempts[${i}]`),
    ),
    malformed: turn.malformed === undefined ? false : boolean(turn.malformed, `${path}.malformed`),
    hang: turn.hang === undefined ? false : boolean(turn.hang, `${path}.hang`),
    usage: turn.usage === undefined ? {} : parseUsage(turn.usage, `${path}.usage`),
    stopReason: turn.stop_reason === undefined ? null : oneOf(turn.stop_reason, STOP_REASONS, `${path}.stop_reason`),
    expectRequestContains: list(turn.expect_request_contains, `${path}.expect_request_contains`).map((x, i) =>
      string(x, `${path}.expect_request_contains[${i}]`),
    ),
    expectRequestExcludes: list(turn.expect_request_excludes, `${path}.expect_request_excludes`).map((x, i) =>
      string(x, `${path}.expect_request_excludes[${i}]`),
    ),
  };
}

function parseToolCall(value: unknown, path: string): FakeToolCall {
  const call = object(value, path, ['name', 'arguments', 'raw_arguments', 'id']);
  if (call.arguments !== undefined && call.raw_arguments !== undefined) {
    throw new FixtureFormatError(`${path} has both arguments and raw_arguments; use one`);
  }
  let rawArguments = '{}';
  if (call.raw_arguments !== undefined) rawArguments = string(call.raw_arguments, `${path}.raw_arguments`, true);
  else if (call.arguments !== undefined) rawArguments = JSON.stringify(object(call.arguments, `${path}.arguments`));
  return {
    name: string(call.name, `${path}.name`),
    rawArguments,
    id: call.id === undefined ? null : string(call.id, `${path}.id`),
  };
}

function parseFailure(value: unknown, path: string): FakeFailure {
  const failure = object(value, path, ['kind', 'message', 'code']);
  return {
    kind: oneOf(failure.kind, FAILURE_KINDS, `${path}.kind`),
    message: string(failure.message, `${path}.message`),
    code: failure.code === undefined ? null : string(failure.code, `${path}.code`),
  };
}

function parseUsage(value: unknown, path: string): Partial<FakeUsage> {
  const usage = object(value, path, Object.keys(USAGE_KEYS));
  const result: Partial<Record<keyof FakeUsage, number>> = {};
  for (const [key, field] of Object.entries(USAGE_KEYS)) {
    if (usage[key] !== undefined) result[field] = count(usage[key], `${path}.${key}`);
  }
  return result;
}

/** An object whose keys are all in `allowed` (when given). */
function object(value: unknown, path: string, allowed?: readonly string[]): Doc {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FixtureFormatError(`${path} must be a mapping`);
  }
  const doc = value as Doc;
  if (allowed !== undefined) {
    const unknown = Object.keys(doc).filter((k) => !allowed.includes(k));
    if (unknown.length > 0) {
      throw new FixtureFormatError(`${path} has unknown key(s) ${unknown.join(', ')}; allowed: ${allowed.join(', ')}`);
    }
  }
  return doc;
}

function list(value: unknown, path: string): readonly unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new FixtureFormatError(`${path} must be a list`);
  return value;
}

function string(value: unknown, path: string, allowEmpty = false): string {
  if (typeof value !== 'string' || (!allowEmpty && value === '')) {
    throw new FixtureFormatError(`${path} must be a ${allowEmpty ? '' : 'non-empty '}string`);
  }
  return value;
}

function boolean(value: unknown, path: string): boolean {
  if (typeof value !== 'boolean') throw new FixtureFormatError(`${path} must be true or false`);
  return value;
}

function positive(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new FixtureFormatError(`${path} must be a positive integer`);
  }
  return value;
}

function count(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new FixtureFormatError(`${path} must be a non-negative integer`);
  }
  return value;
}

function oneOf<T extends string>(value: unknown, options: readonly T[], path: string): T {
  if (typeof value !== 'string' || !(options as readonly string[]).includes(value)) {
    throw new FixtureFormatError(`${path} must be one of ${options.join(', ')}`);
  }
  return value as T;
}
