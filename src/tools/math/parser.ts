import type { ExprNode } from './ast';
import { CalcFailure } from './calc-reason';
import { CALC_CONSTANTS, CALC_FUNCTIONS, KNOWN_NAMES } from './functions';
import { CALC_LIMITS } from './limits';
import { describeToken, type BinaryOperator, type Token } from './tokens';

interface OperatorInfo {
  readonly precedence: number;
  readonly rightAssociative: boolean;
}

/**
 * Binary operator precedence. Unary sign sits between multiplication and power
 * (`UNARY_PRECEDENCE`), which gives the mathematical convention `-2^2 = -(2^2) = -4`
 * (as in Python and most textbooks; spreadsheets differ) while `2^-1` and `2*-3` still parse.
 */
const OPERATORS: Readonly<Record<BinaryOperator, OperatorInfo>> = {
  '+': { precedence: 1, rightAssociative: false },
  '-': { precedence: 1, rightAssociative: false },
  '*': { precedence: 2, rightAssociative: false },
  '/': { precedence: 2, rightAssociative: false },
  '%': { precedence: 2, rightAssociative: false },
  '^': { precedence: 4, rightAssociative: true },
};
const UNARY_PRECEDENCE = 3;

/**
 * Parses tokens into an expression tree by precedence climbing. Checks, in this order:
 * balanced parentheses (so `(1+2` says "unbalanced" rather than "unexpected end"), then syntax,
 * nesting depth, known names and function arity. Never evaluates anything.
 * @throws CalcFailure
 */
export function parse(tokens: readonly Token[]): ExprNode {
  if (tokens.length === 0) throw new CalcFailure('empty_expression', 'expression is empty');
  checkBalancedParentheses(tokens);
  return new Parser(tokens).parseAll();
}

function checkBalancedParentheses(tokens: readonly Token[]): void {
  let depth = 0;
  for (const token of tokens) {
    if (token.kind === 'lparen') depth += 1;
    if (token.kind === 'rparen') {
      depth -= 1;
      if (depth < 0) {
        throw new CalcFailure('unbalanced_parentheses', `unmatched ')' at position ${token.position}`);
      }
    }
  }
  if (depth > 0) throw new CalcFailure('unbalanced_parentheses', `${depth} unclosed '('`);
}

class Parser {
  private index = 0;

  constructor(private readonly tokens: readonly Token[]) {}

  parseAll(): ExprNode {
    const node = this.parseExpression(0, 0);
    const extra = this.peek();
    if (extra !== undefined) {
      throw new CalcFailure('trailing_input', `unexpected ${describeToken(extra)} after a complete expression`);
    }
    return node;
  }

  /** Precedence climbing: consumes operators binding at least as tightly as `minPrecedence`. */
  private parseExpression(minPrecedence: number, depth: number): ExprNode {
    let left = this.parseOperand(depth);
    for (;;) {
      const token = this.peek();
      if (token?.kind !== 'operator') return left;
      const info = OPERATORS[token.operator];
      if (info.precedence < minPrecedence) return left;
      this.index += 1;
      // A right-associative operator recurses at its own precedence; that recursion is real nesting.
      const right = info.rightAssociative
        ? this.parseExpression(info.precedence, this.nest(depth))
        : this.parseExpression(info.precedence + 1, depth);
      left = { kind: 'binary', operator: token.operator, left, right };
    }
  }

  private parseOperand(depth: number): ExprNode {
    const token = this.next('an operand');
    switch (token.kind) {
      case 'operator':
        if (token.operator === '-' || token.operator === '+') {
          const operand = this.parseExpression(UNARY_PRECEDENCE, this.nest(depth));
          return { kind: 'unary', operator: token.operator, operand };
        }
        throw new CalcFailure('unexpected_token', `expected an operand but found ${describeToken(token)}`);
      case 'number':
        return { kind: 'number', text: token.text };
      case 'identifier':
        return this.parseIdentifier(token.name, token.position, depth);
      case 'lparen': {
        const inner = this.parseExpression(0, this.nest(depth));
        this.expectRightParen();
        return inner;
      }
      case 'rparen':
      case 'comma':
        throw new CalcFailure('unexpected_token', `expected an operand but found ${describeToken(token)}`);
      default: {
        const unreachable: never = token;
        throw new Error(`unhandled token ${String(unreachable)}`);
      }
    }
  }

  private parseIdentifier(name: string, position: number, depth: number): ExprNode {
    const fn = CALC_FUNCTIONS.get(name);
    if (fn !== undefined) {
      if (this.peek()?.kind !== 'lparen') {
        throw new CalcFailure(
          'unexpected_token',
          `function '${name}' at position ${position} must be called as ${fn.signature}`,
        );
      }
      this.index += 1;
      const args = this.parseArguments(this.nest(depth));
      if (args.length < fn.minArgs || args.length > fn.maxArgs) {
        throw new CalcFailure('wrong_arity', `${name} takes ${fn.signature}, got ${args.length} argument(s)`);
      }
      return { kind: 'call', name, args };
    }
    if (CALC_CONSTANTS.has(name)) return { kind: 'constant', name };
    throw new CalcFailure(
      'unknown_identifier',
      `unknown name '${name}' at position ${position}; known: ${KNOWN_NAMES}`,
    );
  }

  /** Parses `a, b, c)` after the opening parenthesis of a call; `()` yields no arguments. */
  private parseArguments(depth: number): ExprNode[] {
    const args: ExprNode[] = [];
    if (this.peek()?.kind === 'rparen') {
      this.index += 1;
      return args;
    }
    for (;;) {
      args.push(this.parseExpression(0, depth));
      const token = this.next("',' or ')'");
      if (token.kind === 'rparen') return args;
      if (token.kind !== 'comma') {
        throw new CalcFailure('unexpected_token', `expected ',' or ')' but found ${describeToken(token)}`);
      }
    }
  }

  private expectRightParen(): void {
    const token = this.next("')'");
    if (token.kind !== 'rparen') {
      throw new CalcFailure('unexpected_token', `expected ')' but found ${describeToken(token)}`);
    }
  }

  private nest(depth: number): number {
    const deeper = depth + 1;
    if (deeper > CALC_LIMITS.maxNestingDepth) {
      throw new CalcFailure('nesting_too_deep', `expression nests deeper than ${CALC_LIMITS.maxNestingDepth} levels`);
    }
    return deeper;
  }

  private peek(): Token | undefined {
    return this.tokens[this.index];
  }

  private next(expected: string): Token {
    const token = this.tokens[this.index];
    if (token === undefined) throw new CalcFailure('unexpected_end', `expression ended where ${expected} was expected`);
    this.index += 1;
    return token;
  }
}
