import Ajv, { type ValidateFunction } from 'ajv';
import type { ArgumentRules } from '../domain/mcp-grants';

/**
 * Per-agent argument rules on MCP tools (docs/mcp.md "Argument rules", ADR 0039): in a grant, per
 * tool, per argument name, a JSON Schema the argument must satisfy when the call gives it. Rules
 * are compiled with a strict Ajv (an unknown keyword, a bad regex or a malformed schema is not a
 * rule) when the grant is made — agent file or API — and checked by policy before the call runs.
 */

const TOOL = /^[a-z][a-z0-9_]*$/;
const MAX_TOOLS = 200;
const MAX_ARGUMENTS = 50;
const MAX_RULE_BYTES = 8192;

// Strict about keywords (a misspelt one is an error, not a no-op); a rule may omit `type`.
const ajv = new Ajv({ allErrors: false, strict: true, strictTypes: false, strictTuples: false, validateSchema: true });
/** Compiled rules by their JSON text (grants are few and change rarely; bounded anyway). */
const compiled = new Map<string, ValidateFunction>();

function compile(schema: Readonly<Record<string, unknown>>): ValidateFunction {
  const key = JSON.stringify(schema);
  let v = compiled.get(key);
  if (!v) {
    v = ajv.compile(schema);
    if (compiled.size >= 1000) compiled.clear();
    compiled.set(key, v);
  }
  return v;
}

/** A rule that is not usable: `field` names it (`rules.read_file.path`), `message` says why. */
export class ArgumentRuleError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`);
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Validates a grant's `rules` (`{<tool>: {<argument>: <JSON Schema>}}`) and returns them as typed;
 * throws ArgumentRuleError naming the first bad field (`at` prefixes it, e.g. `rules`).
 */
export function parseArgumentRules(raw: unknown, at = 'rules'): Record<string, ArgumentRules> {
  if (raw === undefined || raw === null) return {};
  if (!isPlainObject(raw)) throw new ArgumentRuleError(at, 'must be an object of tools');
  const tools = Object.entries(raw);
  if (tools.length > MAX_TOOLS) throw new ArgumentRuleError(at, `at most ${MAX_TOOLS} tools`);
  const out: Record<string, ArgumentRules> = {};
  for (const [tool, args] of tools) {
    const toolAt = `${at}.${tool.slice(0, 80)}`;
    if (!TOOL.test(tool)) throw new ArgumentRuleError(toolAt, 'is not a tool name ([a-z][a-z0-9_]*)');
    if (!isPlainObject(args)) throw new ArgumentRuleError(toolAt, 'must be an object of arguments');
    if (Object.keys(args).length > MAX_ARGUMENTS)
      throw new ArgumentRuleError(toolAt, `at most ${MAX_ARGUMENTS} arguments`);
    const rules: Record<string, Record<string, unknown>> = {};
    for (const [arg, schema] of Object.entries(args)) {
      const field = `${toolAt}.${arg.slice(0, 80)}`;
      if (arg.length === 0 || arg.length > 128 || arg === '__proto__')
        throw new ArgumentRuleError(field, 'is not an argument name');
      rules[arg] = schemaOf(schema, field);
    }
    out[tool] = rules;
  }
  return out;
}

function schemaOf(schema: unknown, field: string): Record<string, unknown> {
  if (!isPlainObject(schema)) throw new ArgumentRuleError(field, 'must be a JSON Schema object');
  if (JSON.stringify(schema).length > MAX_RULE_BYTES)
    throw new ArgumentRuleError(field, `a rule is at most ${MAX_RULE_BYTES} bytes`);
  if ('$ref' in schema || '$id' in schema)
    throw new ArgumentRuleError(field, 'is not a valid JSON Schema rule: $ref and $id are not allowed');
  try {
    compile(schema);
  } catch (e) {
    throw new ArgumentRuleError(field, `is not a valid JSON Schema: ${(e as Error).message.slice(0, 300)}`);
  }
  return schema;
}

/** The first argument that breaks its rule: its name and what the rule says. */
export interface ArgumentRuleViolation {
  readonly field: string;
  readonly message: string;
}

/** Checks the call's arguments against its tool's rules; an argument the call does not give is not checked. */
export function checkArgumentRules(
  rules: ArgumentRules,
  args: Readonly<Record<string, unknown>>,
): ArgumentRuleViolation | null {
  for (const [arg, schema] of Object.entries(rules)) {
    if (!Object.prototype.hasOwnProperty.call(args, arg)) continue;
    const validate = compile(schema);
    if (validate(args[arg])) continue;
    const e = validate.errors?.[0];
    const field = `${arg}${(e?.instancePath ?? '').replace(/\//g, '.')}`;
    return { field, message: e?.message ?? 'does not satisfy its rule' };
  }
  return null;
}
