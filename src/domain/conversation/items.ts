/**
 * Provider-neutral conversation items (plan §6.6). Provider-opaque reasoning is stored and replayed
 * verbatim, never authored or interpreted, and never crosses a run or provider boundary (§27.4).
 */
export type TextPart = { readonly type: 'text'; readonly text: string };
export type ArtifactReferencePart = {
  readonly type: 'artifact_ref';
  readonly artifactId: string;
  readonly mediaType: string;
};
export type ContentPart = TextPart | ArtifactReferencePart;

export type TrustLevel = 'platform' | 'user' | 'tool_untrusted';

export type SystemMessage = { readonly kind: 'system'; readonly text: string };
export type UserMessage = {
  readonly kind: 'user';
  readonly messageId: string;
  readonly content: readonly ContentPart[];
};
export type AssistantMessage = { readonly kind: 'assistant'; readonly text: string };
export type ToolCallItem = {
  readonly kind: 'tool_call';
  /** The provider's call id, preserved so the result can be matched on the next request. */
  readonly callId: string;
  readonly name: string;
  readonly arguments: Record<string, unknown>;
};
export type ToolResultItem = {
  readonly kind: 'tool_result';
  readonly callId: string;
  readonly name: string;
  /** JSON-serialisable result or error outcome, already truncated to the tool's output ceiling. */
  readonly output: unknown;
  readonly isError: boolean;
  readonly trust: TrustLevel;
};
export type ProviderReasoningItem = {
  readonly kind: 'provider_reasoning';
  readonly provider: string;
  readonly opaquePayload: Record<string, unknown>;
};

export type ConversationItem =
  SystemMessage | UserMessage | AssistantMessage | ToolCallItem | ToolResultItem | ProviderReasoningItem;

/** Items that may carry over between runs and providers (everything but provider-opaque reasoning). */
export function isPortable(item: ConversationItem): boolean {
  return item.kind !== 'provider_reasoning';
}

export function textOf(content: readonly ContentPart[]): string {
  return content
    .filter((p): p is TextPart => p.type === 'text')
    .map((p) => p.text)
    .join('');
}
