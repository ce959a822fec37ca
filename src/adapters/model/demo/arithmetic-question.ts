/**
 * Recognises an arithmetic question in plain English and extracts the formal expression the
 * `math.calculate` grammar accepts ("What is 17 multiplied by 23?" -> "17 * 23"). Pure and
 * deterministic; operator words become symbols, then the longest run of expression characters
 * that holds a number and an operator is the expression.
 */

/** Word forms rewritten to symbols, in order (longer phrases before their prefixes). */
const OPERATOR_WORDS: readonly (readonly [RegExp, string])[] = [
  [/\bsquare root of\s*(\([^()]*\)|-?\d+(?:\.\d+)?)/g, 'sqrt($1)'],
  [/\b(?:raised )?to the power of\b/g, '^'],
  [/\braised to\b/g, '^'],
  [/\s*\bsquared\b/g, '^2'],
  [/\s*\bcubed\b/g, '^3'],
  [/\bmultiplied by\b/g, '*'],
  [/\btimes\b/g, '*'],
  [/(\d)\s*x\s*(?=\d)/g, '$1 * '],
  [/\bdivided by\b/g, '/'],
  [/\bplus\b/g, '+'],
  [/\bminus\b/g, '-'],
  [/\bmodulo\b|\bmod\b/g, '%'],
];

/** Phrases that say "compute this", so a stray "2024-01-05" in a sentence is not arithmetic. */
const INTENT = /\b(?:calculate|compute|evaluate|solve|what is|what's|whats|how much is)\b/;

/** Runs of characters an expression may contain; `sqrt` is the one function word kept. */
const EXPRESSION_RUN = /(?:sqrt|[0-9.+\-*/^%()\s])+/g;
const OPERATOR = /[+\-*/^%]|sqrt/;

/** The formal expression in `message`, or null when it is not an arithmetic question. */
export function extractArithmeticExpression(message: string): string | null {
  const lowered = message
    .toLowerCase()
    .replace(/\u2019/g, "'")
    .replace(/(\d),(?=\d{3}\b)/g, '$1')
    .trim();
  let rewritten = lowered;
  for (const [pattern, replacement] of OPERATOR_WORDS) rewritten = rewritten.replace(pattern, replacement);
  const wordsRewritten = rewritten !== lowered;

  let best: string | null = null;
  for (const match of rewritten.matchAll(EXPRESSION_RUN)) {
    const candidate = tidy(match[0]);
    if (!/\d/.test(candidate) || !OPERATOR.test(candidate)) continue;
    if (best === null || candidate.length > best.length) best = candidate;
  }
  if (best === null) return null;
  // A bare expression ("(2+3)*4") needs no cue; inside a sentence a cue or an operator word must say so.
  const bare = best === tidy(rewritten.replace(/[?!.=\s]+$/, ''));
  return bare || wordsRewritten || INTENT.test(lowered) ? best : null;
}

/** Trims what the sentence around the run left at its edges: spaces, a period, stray parentheses or operators. */
function tidy(run: string): string {
  return run
    .trim()
    .replace(/^[)*/^%\s]+/, '')
    .replace(/[(.+\-*/^%\s]+$/, '')
    .trim();
}
