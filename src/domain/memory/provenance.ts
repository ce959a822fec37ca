import type { MemoryTrust } from './memory-record';

/** A text the run has seen, with the event it came in. */
export interface SeenText {
  readonly eventId: number;
  readonly text: string;
}

/** An untrusted tool result the run has seen (trust `external_untrusted`). */
export interface UntrustedText extends SeenText {
  readonly tool: string;
}

export interface Provenance {
  readonly trust: MemoryTrust;
  readonly attribution: string | null;
  readonly sourceEventIds: number[];
}

/** The share of a statement's words a source must hold to count as where it came from. */
export const GROUNDED_SHARE = 0.8;

const STOP = new Set(
  'a an the is are was were be been my our your his her their its of to in on at for and or that this it i me we you user users remember please'.split(
    ' ',
  ),
);

/** The content words of a text: lower case, letters and digits, stop words and "remember" dropped. */
export function contentWords(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'’/_-]*/gu) ?? []).filter((w) => !STOP.has(w));
}

/** How much of `statement`'s content words `source` holds (1 when the statement has none). */
export function share(statement: string, source: string): number {
  const words = contentWords(statement);
  if (words.length === 0) return 1;
  const have = new Set(contentWords(source));
  return words.filter((w) => have.has(w)).length / words.length;
}

/**
 * Where a statement the model proposes to remember came from, decided by deterministic code (the
 * model proposes; this decides, ADR 0035): the user's own words when a user message of the run
 * holds (nearly) all its content words; untrusted content — a tentative, attributed memory — when an
 * untrusted tool result holds at least as much of it, or when the run has read untrusted content
 * and the statement is not the user's (that content may have put it there); otherwise inferred.
 */
export function provenanceOf(
  statement: string,
  user: readonly SeenText[],
  untrusted: readonly UntrustedText[],
): Provenance {
  const best = <T extends SeenText>(xs: readonly T[]): { x: T; s: number } | null =>
    xs.reduce<{ x: T; s: number } | null>((b, x) => {
      const s = share(statement, x.text);
      return b === null || s > b.s ? { x, s } : b;
    }, null);
  const u = best(user);
  const t = best(untrusted);
  const userIds = u ? [u.x.eventId] : [];
  if (t && t.s >= GROUNDED_SHARE && (!u || t.s >= u.s))
    return { trust: 'external', attribution: `tool:${t.x.tool}`, sourceEventIds: [t.x.eventId] };
  if (u && u.s >= GROUNDED_SHARE) return { trust: 'user', attribution: null, sourceEventIds: userIds };
  if (t)
    return {
      trust: 'external',
      attribution: `tool:${t.x.tool}`,
      sourceEventIds: [...new Set([...userIds, t.x.eventId])].sort((a, b) => a - b),
    };
  return { trust: 'inferred', attribution: null, sourceEventIds: userIds };
}
