import type { ProviderReasoningItem, ToolCallItem } from '../conversation/items';

/**
 * What a checkpoint stores (ARCHITECTURE.md §6): references into the event log plus what events
 * cannot hold. Its size does not grow with the run: the conversation itself stays in the log.
 */
export interface CheckpointState {
  readonly schema: 1;
  readonly step: number;
  /** Where the loop stands after this checkpoint. */
  readonly phase: 'model_completed' | 'tools_completed' | 'terminal';
  /** Tool calls of the model turn at `step`, with their arguments (for `model_completed`). */
  readonly pendingToolCalls: readonly ToolCallItem[];
  /** Calls whose argument JSON did not parse; answered with a protocol error result. */
  readonly malformedToolCalls: readonly { readonly callId: string; readonly name: string; readonly raw: string }[];
  /** Provider-opaque reasoning for the active tool loop only; never crosses runs or providers. */
  readonly providerContinuation: { readonly provider: string; readonly items: readonly ProviderReasoningItem[] } | null;
  /**
   * The slice of the session log that is this run's conversation so far: from this sequence up to
   * the checkpoint row's `last_event_sequence` (written atomically with the events it follows).
   */
  readonly conversationRange: { readonly fromSequence: number };
}

export interface StoredCheckpoint {
  readonly runId: string;
  readonly version: number;
  readonly state: CheckpointState;
  readonly lastEventSequence: number;
  readonly sizeBytes: number;
}
