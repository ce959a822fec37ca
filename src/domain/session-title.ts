import type { ContentPart } from './conversation/items';

/** The longest title a session may have (the `session.created` and `session.title.changed` schemas). */
export const SESSION_TITLE_MAX_CHARS = 500;

/** How much of the first message a derived title keeps: a list row's worth. */
const DERIVED_TITLE_CHARS = 80;

/**
 * The title a session takes from its first message: the text's first non-empty line, whitespace
 * collapsed, cut at a word boundary to fit a list row (with an ellipsis when cut). Null when the
 * message has no text.
 */
export function titleFromMessage(content: readonly ContentPart[]): string | null {
  const text = content
    .map((p) => (p.type === 'text' ? p.text : ''))
    .join('\n')
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .find((line) => line !== '');
  if (text === undefined) return null;
  if (text.length <= DERIVED_TITLE_CHARS) return text;
  const cut = text.slice(0, DERIVED_TITLE_CHARS - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > DERIVED_TITLE_CHARS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
