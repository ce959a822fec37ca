import type { BinaryOperator } from './tokens';

/** The parsed expression. Numbers stay as source text so the evaluator decides their precision. */
export type ExprNode =
  | { readonly kind: 'number'; readonly text: string }
  | { readonly kind: 'constant'; readonly name: string }
  | { readonly kind: 'unary'; readonly operator: '+' | '-'; readonly operand: ExprNode }
  | { readonly kind: 'binary'; readonly operator: BinaryOperator; readonly left: ExprNode; readonly right: ExprNode }
  | { readonly kind: 'call'; readonly name: string; readonly args: readonly ExprNode[] };
