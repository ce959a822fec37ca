/**
 * A small JSON Schema interpreter for the console's "Edit arguments" form (ADR 0044). Ajv compiles
 * validators with `new Function`, which the dashboard's CSP (`script-src 'self'`, no
 * 'unsafe-eval') forbids, so the form interprets the keywords tool schemas use: type, required,
 * properties, additionalProperties, enum, const, string lengths and patterns, number bounds, array
 * items and sizes. Anything else is left to the server, whose Ajv check is the authority: this
 * only saves a round trip and names the field before the human submits.
 */
export interface FieldIssue {
  /** `arguments.text`, `arguments.items.0`: the same naming as the API's refusal. */
  readonly field: string;
  readonly message: string;
}

type Schema = Record<string, unknown>;

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(v: unknown, want: unknown): boolean {
  const wanted = Array.isArray(want) ? (want as string[]) : [want as string];
  const actual = typeOf(v);
  return wanted.some((w) => w === actual || (w === 'number' && actual === 'integer'));
}

function checkString(v: string, s: Schema, field: string, out: FieldIssue[]): void {
  if (typeof s.minLength === 'number' && v.length < s.minLength)
    out.push({ field, message: `must have at least ${s.minLength} character${s.minLength === 1 ? '' : 's'}` });
  if (typeof s.maxLength === 'number' && v.length > s.maxLength)
    out.push({ field, message: `must have at most ${s.maxLength} characters` });
  if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(v))
    out.push({ field, message: `must match the pattern ${s.pattern}` });
}

function checkNumber(v: number, s: Schema, field: string, out: FieldIssue[]): void {
  if (typeof s.minimum === 'number' && v < s.minimum) out.push({ field, message: `must be at least ${s.minimum}` });
  if (typeof s.maximum === 'number' && v > s.maximum) out.push({ field, message: `must be at most ${s.maximum}` });
}

function checkObject(v: Record<string, unknown>, s: Schema, field: string, out: FieldIssue[]): void {
  const props = (s.properties ?? {}) as Record<string, Schema>;
  for (const name of (s.required ?? []) as string[])
    if (!(name in v)) out.push({ field: `${field}.${name}`, message: 'is required' });
  for (const [name, value] of Object.entries(v)) {
    if (props[name]) check(value, props[name], `${field}.${name}`, out);
    else if (s.additionalProperties === false)
      out.push({ field: `${field}.${name}`, message: 'is not an allowed property' });
    else if (s.additionalProperties && typeof s.additionalProperties === 'object')
      check(value, s.additionalProperties as Schema, `${field}.${name}`, out);
  }
}

function checkArray(v: unknown[], s: Schema, field: string, out: FieldIssue[]): void {
  if (typeof s.minItems === 'number' && v.length < s.minItems)
    out.push({ field, message: `must have at least ${s.minItems} items` });
  if (typeof s.maxItems === 'number' && v.length > s.maxItems)
    out.push({ field, message: `must have at most ${s.maxItems} items` });
  if (s.items && typeof s.items === 'object' && !Array.isArray(s.items))
    v.forEach((item, i) => check(item, s.items as Schema, `${field}.${i}`, out));
}

function check(v: unknown, s: Schema, field: string, out: FieldIssue[]): void {
  if (s.type !== undefined && !typeMatches(v, s.type)) {
    out.push({
      field,
      message: `must be ${Array.isArray(s.type) ? s.type.join(' or ') : typeof s.type === 'string' ? s.type : JSON.stringify(s.type)}`,
    });
    return;
  }
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v)))
    out.push({ field, message: `must be one of ${s.enum.map((e) => JSON.stringify(e)).join(', ')}` });
  if ('const' in s && JSON.stringify(s.const) !== JSON.stringify(v))
    out.push({ field, message: `must be ${JSON.stringify(s.const)}` });
  if (typeof v === 'string') checkString(v, s, field, out);
  else if (typeof v === 'number') checkNumber(v, s, field, out);
  else if (Array.isArray(v)) checkArray(v, s, field, out);
  else if (v !== null && typeof v === 'object') checkObject(v as Record<string, unknown>, s, field, out);
}

/** The issues of `args` against a tool's arguments schema, fields named from `arguments`. */
export function argumentIssues(args: unknown, schema: Schema): FieldIssue[] {
  const out: FieldIssue[] = [];
  check(args, schema, 'arguments', out);
  return out;
}
