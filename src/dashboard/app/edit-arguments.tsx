import { useState } from 'preact/hooks';
import { argumentIssues, type FieldIssue } from './schema-check';

/** What the JSON in the editor amounts to: arguments to send, or why they cannot be sent. */
function parse(
  text: string,
  schema: Record<string, unknown>,
): { args: Record<string, unknown> | null; issues: FieldIssue[] } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { args: null, issues: [{ field: 'arguments', message: `is not valid JSON (${(e as Error).message})` }] };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    return { args: null, issues: [{ field: 'arguments', message: 'must be a JSON object' }] };
  const issues = argumentIssues(v, schema);
  return { args: issues.length === 0 ? (v as Record<string, unknown>) : null, issues };
}

/**
 * The console's "Edit arguments" form (issue 33, ADR 0044): the proposed arguments as editable
 * JSON, checked against the tool's arguments schema as the human types (each failing field named);
 * "Approve with edits" is enabled only for arguments that pass. The server checks again (schema
 * and policy) and its refusal is shown by the card.
 */
export function EditArguments(props: {
  initial: unknown;
  schema: Record<string, unknown>;
  busy: boolean;
  onApprove(args: Record<string, unknown>): void;
  onCancel(): void;
  /** The text changed: a refusal of the previous text no longer applies. */
  onEdit(): void;
}) {
  const [text, setText] = useState(JSON.stringify(props.initial ?? {}, null, 2));
  const { args, issues } = parse(text, props.schema);
  const fields = Object.keys((props.schema.properties ?? {}) as Record<string, unknown>);
  return (
    <form
      class="edit-arguments"
      data-edit-form
      onSubmit={(e) => {
        e.preventDefault();
        if (args) props.onApprove(args);
      }}
    >
      <label>
        <span>
          Edited arguments (JSON){fields.length > 0 ? <span class="muted"> · fields: {fields.join(', ')}</span> : null}
        </span>
        <textarea
          name="arguments"
          rows={Math.min(12, text.split('\n').length + 1)}
          spellcheck={false}
          aria-invalid={issues.length > 0}
          value={text}
          onInput={(e) => {
            setText(e.currentTarget.value);
            props.onEdit();
          }}
        />
      </label>
      {issues.length > 0 ? (
        <ul class="error" data-edit-issues aria-live="polite">
          {issues.map((i) => (
            <li key={`${i.field} ${i.message}`}>
              <code>{i.field}</code> {i.message}
            </li>
          ))}
        </ul>
      ) : null}
      <div class="row">
        <button type="submit" class="ok" disabled={props.busy || !args}>
          Approve with edits
        </button>
        <button type="button" disabled={props.busy} onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
