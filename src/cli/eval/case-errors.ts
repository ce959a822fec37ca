import type { ErrorObject } from 'ajv';
import { ValidationError } from '../../domain/errors';

/** One problem in one case file, addressed by a dotted field path (`expected.tool_calls[0].count`). */
export interface CaseIssue {
  readonly file: string;
  /** Dotted path of the offending field; `(file)` for problems with the file as a whole. */
  readonly field: string;
  readonly message: string;
}

/** Case files are invalid: the CLI prints every issue and exits 2 without running anything. */
export class CaseFileError extends ValidationError {
  constructor(readonly issues: readonly CaseIssue[]) {
    super(issues.map(formatIssue).join('\n'), { issues: issues.map((i) => ({ ...i })) });
  }
}

/** `evals/cases/02_x.yaml: expected.tool_calls[0].count: must be >= 0`. */
export function formatIssue(i: CaseIssue): string {
  return `${i.file}: ${i.field}: ${i.message}`;
}

/** Turns Ajv's JSON Pointers into the dotted paths a YAML author recognises. */
export function fieldPath(pointer: string, child?: string): string {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out === '' ? p : `.${p}`;
  return out === '' ? '(root)' : out;
}

const MAX_LISTED = 8;

/**
 * One issue per Ajv error, pointing at the field itself: a missing or unknown key is reported
 * at `parent.key`, not at the parent object where Ajv puts it.
 */
export function issuesFromAjv(file: string, errors: readonly ErrorObject[]): CaseIssue[] {
  const seen = new Set<string>();
  const issues: CaseIssue[] = [];
  for (const e of errors) {
    const params: Record<string, unknown> = e.params;
    let field = fieldPath(e.instancePath);
    let message = e.message ?? `fails ${e.keyword}`;
    if (e.keyword === 'required' && typeof params['missingProperty'] === 'string') {
      field = fieldPath(e.instancePath, params['missingProperty']);
      message = 'is required';
    } else if (e.keyword === 'additionalProperties' && typeof params['additionalProperty'] === 'string') {
      field = fieldPath(e.instancePath, params['additionalProperty']);
      message = 'is not a known key';
    } else if (e.keyword === 'propertyNames') {
      continue; // the failing name's own error (below) says which key and why
    } else if (e.keyword === 'enum' && Array.isArray(params['allowedValues'])) {
      const allowed = params['allowedValues'].map(String);
      message =
        allowed.length <= MAX_LISTED
          ? `must be one of ${allowed.join(', ')}`
          : `must be one of the ${allowed.length} allowed values (e.g. ${allowed.slice(0, 3).join(', ')}, ...)`;
    }
    if (e.propertyName !== undefined) {
      // An error inside `propertyNames` is about a key of the object, not its value.
      field = fieldPath(e.instancePath, e.propertyName);
      message = `is not an allowed key (${message})`;
    }
    const key = `${field}\u0000${message}`;
    if (seen.has(key)) continue; // propertyNames reports the inner enum failure too
    seen.add(key);
    issues.push({ file, field, message });
  }
  return issues;
}
