/** One schema violation of edited arguments, addressed by JSON Pointer (`/text`). */
export interface EditIssue {
  readonly path: string;
  readonly message: string;
}

/**
 * What the policy makes of an edited call (ADR 0044): `same_or_weaker` — the human's approval
 * covers it (it needs approval, or less); `denied` — hardline rules or the policy refuse it, so no
 * approval can let it run.
 */
export type EditVerdict =
  | { readonly kind: 'ok'; readonly editedHash: string; readonly originalHash: string }
  | { readonly kind: 'unknown_tool' }
  | { readonly kind: 'invalid'; readonly issues: readonly EditIssue[] }
  | { readonly kind: 'denied'; readonly reasonCode: string; readonly explanation: string };

/**
 * The checks an "approve with edits" runs before anything is written (issue 33): the tool's
 * strict input schema, then the policy with the edited arguments. The worker revalidates both
 * before the tool runs; these checks exist so a bad edit is refused to the human, not to the model.
 */
export interface ApprovalEditChecks {
  /** The tool's input JSON Schema (for the console's form), or null when no such tool is registered. */
  argumentsSchema(toolName: string): Record<string, unknown> | null;
  /** Checks `edited` for `toolName`; `original` is the call's recorded arguments (hashed for the audit). */
  check(toolName: string, original: Record<string, unknown>, edited: Record<string, unknown>): EditVerdict;
}
