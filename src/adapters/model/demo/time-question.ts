/**
 * Recognises "what time is it" questions ("What time is it in Europe/Paris?", "what's the time",
 * "current time in America/New_York"). The zone keeps the user's spelling: IANA names are
 * case-sensitive, and the `system.current_time` tool reports an unknown zone itself.
 */

export interface TimeQuestion {
  /** The zone after "in", or undefined to let the tool default to UTC. */
  readonly timezone: string | undefined;
}

const TIME_QUESTION =
  /\b(?:what\s+time\s+is\s+it|what(?:'|\u2019)?s\s+the\s+time|what\s+is\s+the\s+(?:current\s+)?time|current\s+time|time\s+now)\b(?:\s+(?:right\s+)?now)?(?:\s+in\s+([^\s?!,;]+))?/i;

/** The parsed question, or null when the message does not ask for the time. */
export function parseTimeQuestion(message: string): TimeQuestion | null {
  const match = TIME_QUESTION.exec(message);
  if (match === null) return null;
  const zone = match[1]?.replace(/\.+$/, '');
  return { timezone: zone === undefined || zone === '' ? undefined : zone };
}
