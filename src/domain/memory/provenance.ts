import type { SourceEventPayload } from '../events/memory-events';
import type { MemoryTrust } from './memory-record';

/**
 * An event a memory came from: its global id (what the API shows) and its key in its session's
 * stream, by which it is read back (the events' primary key; ids have no B-tree of their own, ADR 0059).
 */
export type SourceEvent = Readonly<SourceEventPayload>;

/** A text the run has seen, with the event it came in. */
export interface SeenText {
  readonly event: SourceEvent;
  readonly text: string;
}

/** An untrusted tool result the run has seen (trust `external_untrusted`). */
export interface UntrustedText extends SeenText {
  readonly tool: string;
}

export interface Provenance {
  readonly trust: MemoryTrust;
  readonly attribution: string | null;
  readonly sourceEvents: SourceEvent[];
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
  const userSources = u ? [u.x.event] : [];
  if (t && t.s >= GROUNDED_SHARE && (!u || t.s >= u.s))
    return { trust: 'external', attribution: `tool:${t.x.tool}`, sourceEvents: [t.x.event] };
  if (u && u.s >= GROUNDED_SHARE) return { trust: 'user', attribution: null, sourceEvents: userSources };
  if (t)
    return {
      trust: 'external',
      attribution: `tool:${t.x.tool}`,
      sourceEvents: distinctSources([...userSources, t.x.event]),
    };
  return { trust: 'inferred', attribution: null, sourceEvents: userSources };
}

/** Sources once each, in id order (the order the API lists them in). */
export function distinctSources(sources: readonly SourceEvent[]): SourceEvent[] {
  const byId = new Map(sources.map((s) => [s.id, s]));
  return [...byId.values()].sort((a, b) => a.id - b.id);
}
