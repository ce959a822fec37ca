import type { ErrorObject } from 'ajv';

/** One schema violation, addressed by JSON Pointer (`''` is the whole value). */
export interface SchemaIssue {
  readonly path: string;
  readonly message: string;
}

/** Outcome of validating a value against a tool schema. */
export type SchemaCheck<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errors: readonly SchemaIssue[] };

/**
 * Turns Ajv errors into issues a model can act on. Missing and unexpected properties point at
 * the property itself (`/timezone is required`) rather than at the enclosing object, which is
 * where Ajv reports them.
 */
export function toSchemaIssues(errors: readonly ErrorObject[] | null | undefined): SchemaIssue[] {
  return (errors ?? []).map((error) => {
    const params: Record<string, unknown> = error.params;
    if (error.keyword === 'required' && typeof params['missingProperty'] === 'string') {
      return { path: childPath(error.instancePath, params['missingProperty']), message: 'is required' };
    }
    if (error.keyword === 'additionalProperties' && typeof params['additionalProperty'] === 'string') {
      return {
        path: childPath(error.instancePath, params['additionalProperty']),
        message: 'is not an allowed property',
      };
    }
    return { path: error.instancePath, message: error.message ?? `fails ${error.keyword}` };
  });
}

/** Appends a property to a JSON Pointer, escaping `~` and `/` as RFC 6901 requires. */
function childPath(parent: string, property: string): string {
  return `${parent}/${property.replace(/~/g, '~0').replace(/\//g, '~1')}`;
}
