/** Tiny JSON-Schema builders so the catalog reads like a type declaration. Plain data, no library. */
export type JsonSchema = Record<string, unknown>;

export const str = (extra: JsonSchema = {}): JsonSchema => ({ type: 'string', ...extra });
export const uuid = (): JsonSchema => ({ type: 'string', minLength: 1, maxLength: 64 });
export const int = (extra: JsonSchema = {}): JsonSchema => ({ type: 'integer', ...extra });
export const num = (): JsonSchema => ({ type: 'number' });
export const bool = (): JsonSchema => ({ type: 'boolean' });
export const any = (): JsonSchema => ({});
export const anyObject = (): JsonSchema => ({ type: 'object' });
export const nullable = (s: JsonSchema): JsonSchema => ({ anyOf: [s, { type: 'null' }] });
export const arr = (items: JsonSchema, extra: JsonSchema = {}): JsonSchema => ({ type: 'array', items, ...extra });
export const oneOfStr = (values: readonly string[]): JsonSchema => ({ type: 'string', enum: values });
/** A closed object: every listed field is required, nothing else is allowed. */
export const obj = (props: Record<string, JsonSchema>): JsonSchema => ({
  type: 'object',
  properties: props,
  required: Object.keys(props),
  additionalProperties: false,
});
