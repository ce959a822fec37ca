/** One line of `agent doctor`: what was checked, what was found, and for a ✗ the exact fix. */
export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  /** What was found (never a secret: keys are reported as set or not set, URLs without passwords). */
  readonly detail: string;
  /** For a failed check: the command or setting that fixes it. */
  readonly fix?: string;
}

export const pass = (name: string, detail: string): CheckResult => ({ name, ok: true, detail });
export const fail = (name: string, detail: string, fix: string): CheckResult => ({ name, ok: false, detail, fix });

/** The message of anything thrown, on one line (no stack trace ever reaches the user). */
export function messageOf(e: unknown): string {
  const raw = e instanceof Error ? e.message : String(e);
  return raw.replace(/\s+/g, ' ').trim() || (e instanceof Error ? e.name : 'unknown error');
}
