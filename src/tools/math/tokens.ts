/** Binary operators after normalisation: `**` is read as `^`. */
export type BinaryOperator = '+' | '-' | '*' | '/' | '%' | '^';

export type Token =
  | { readonly kind: 'number'; readonly text: string; readonly position: number }
  | { readonly kind: 'identifier'; readonly name: string; readonly position: number }
  | { readonly kind: 'operator'; readonly operator: BinaryOperator; readonly position: number }
  | { readonly kind: 'lparen'; readonly position: number }
  | { readonly kind: 'rparen'; readonly position: number }
  | { readonly kind: 'comma'; readonly position: number };

/** A short human description of a token for error messages (positions are 0-based offsets). */
export function describeToken(token: Token): string {
  switch (token.kind) {
    case 'number':
      return `number '${token.text}' at position ${token.position}`;
    case 'identifier':
      return `identifier '${token.name}' at position ${token.position}`;
    case 'operator':
      return `operator '${token.operator}' at position ${token.position}`;
    case 'lparen':
      return `'(' at position ${token.position}`;
    case 'rparen':
      return `')' at position ${token.position}`;
    case 'comma':
      return `',' at position ${token.position}`;
    default: {
      const unreachable: never = token;
      return String(unreachable);
    }
  }
}
