import type { ContentPart, ToolResultItem } from '../../../domain/conversation/items';

/** Text of a user message for providers that take text only; artifacts become a short reference. */
export function contentText(content: readonly ContentPart[]): string {
  return content.map((p) => (p.type === 'text' ? p.text : `[artifact ${p.artifactId} (${p.mediaType})]`)).join('');
}

/** A tool result as the string the provider receives; errors are marked so the model can tell. */
export function toolResultText(item: ToolResultItem): string {
  const output = typeof item.output === 'string' ? item.output : JSON.stringify(item.output ?? null);
  return output;
}

/** Parses argument JSON a provider sent back whole (not as deltas); `{}` for empty. */
export function argumentsJson(args: Record<string, unknown>): string {
  return JSON.stringify(args);
}
