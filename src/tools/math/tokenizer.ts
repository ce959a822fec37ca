import { CalcFailure } from './calc-reason';
import { CALC_LIMITS } from './limits';
import type { Token } from './tokens';

const DIGIT = /[0-9]/;
const IDENTIFIER_START = /[A-Za-z_]/;
const IDENTIFIER_PART = /[A-Za-z0-9_]/;
/** Only ASCII layout characters: exotic Unicode spaces would inflate the echoed expression in the output. */
const WHITESPACE = /[ \t\r\n]/;
/**
 * A numeric literal: `12`, `1.5`, `.5`, `1e3`, `2.5E-4`. Anchored with the sticky flag so it matches
 * exactly at the scan position.
 */
const NUMBER_LITERAL = /(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/y;
/** Characters that may not directly follow a number: `1.2.3`, `2x`, `1e` and `2pi` are typos, not products. */
const NUMBER_CONTINUATION = /[A-Za-z0-9_.]/;

/**
 * Splits an expression into tokens. Refuses unknown characters, malformed numbers, and inputs with
 * more than `CALC_LIMITS.maxTokens` tokens (checked while scanning, so the work stays bounded).
 * @throws CalcFailure
 */
export function tokenize(expression: string): Token[] {
  const tokens: Token[] = [];
  let position = 0;
  const push = (token: Token): void => {
    if (tokens.length >= CALC_LIMITS.maxTokens) {
      throw new CalcFailure('too_many_tokens', `expression has more than ${CALC_LIMITS.maxTokens} tokens`);
    }
    tokens.push(token);
  };

  while (position < expression.length) {
    const char = expression[position];
    if (WHITESPACE.test(char)) {
      position += 1;
    } else if (DIGIT.test(char) || (char === '.' && DIGIT.test(expression[position + 1] ?? ''))) {
      const text = readNumber(expression, position);
      push({ kind: 'number', text, position });
      position += text.length;
    } else if (IDENTIFIER_START.test(char)) {
      let end = position + 1;
      while (end < expression.length && IDENTIFIER_PART.test(expression[end])) end += 1;
      push({ kind: 'identifier', name: expression.slice(position, end), position });
      position = end;
    } else if (char === '*' && expression[position + 1] === '*') {
      push({ kind: 'operator', operator: '^', position });
      position += 2;
    } else {
      push(singleCharacterToken(char, position));
      position += 1;
    }
  }
  return tokens;
}

function readNumber(expression: string, start: number): string {
  NUMBER_LITERAL.lastIndex = start;
  const match = NUMBER_LITERAL.exec(expression);
  // The caller only calls us on a digit or on '.' followed by a digit, so the regex always matches.
  const text = match ? match[0] : '';
  const next = expression[start + text.length];
  if (text === '' || (next !== undefined && NUMBER_CONTINUATION.test(next))) {
    const end = scanMalformedEnd(expression, start + text.length);
    throw new CalcFailure(
      'invalid_number',
      `malformed number '${expression.slice(start, end)}' at position ${start} (implicit multiplication is not supported)`,
    );
  }
  return text;
}

function scanMalformedEnd(expression: string, from: number): number {
  let end = from;
  while (end < expression.length && NUMBER_CONTINUATION.test(expression[end])) end += 1;
  return end;
}

function singleCharacterToken(char: string, position: number): Token {
  switch (char) {
    case '+':
    case '-':
    case '*':
    case '/':
    case '%':
    case '^':
      return { kind: 'operator', operator: char, position };
    case '(':
      return { kind: 'lparen', position };
    case ')':
      return { kind: 'rparen', position };
    case ',':
      return { kind: 'comma', position };
    default:
      throw new CalcFailure(
        'invalid_character',
        `unexpected character '${char}' at position ${position}; use digits, + - * / % ^ **, parentheses, commas, functions and constants`,
      );
  }
}
