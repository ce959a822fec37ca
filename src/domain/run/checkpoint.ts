import type { WorkingState } from '../context/working-state';
import type { ProviderReasoningItem, ToolCallItem } from '../conversation/items';

/**
 * The run's reference to the latest compaction in force (issue #11 items 5-6; ADR 0017): a fresh
 * context engine resuming the run folds the session log only after `readAfterSequence` (which the
 * `context.compacted` event itself follows) instead of from the start. Bounded in size: ids,
 * sequences and the working state (capped by the allocator), never the summary or the history.
 */
export interface ContextCheckpointRef {
  /** The `compactionId` of the `context.compacted` event. */
  readonly compactionId: string;
  /** The last session sequence the summary replaces. */
  readonly coveredThroughSequence: number;
  /** Where a restored fold starts reading: ≤ the covered sequence and before the run's user message. */
  readonly readAfterSequence: number;
  /** The working state in force at the build that wrote this reference. */
  readonly workingState: WorkingState;
}

/**
 * What a checkpoint stores (ADR 0007): references into the event log plus what events
 * cannot hold. Its size does not grow with the run: the conversation itself stays in the log.
 */
export interface CheckpointState {
  readonly schema: 1;
  readonly step: number;
  /**
   * Where the loop stands after this checkpoint. `terminal` only in rows written before ADR 0057:
   * a run's terminal write no longer carries a checkpoint (a terminal run is never resumed).
   */
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
  /** The latest compaction of the session as of this run's last build; absent when none. */
  readonly context?: ContextCheckpointRef | null;
}

export interface StoredCheckpoint {
  readonly runId: string;
  readonly version: number;
  readonly state: CheckpointState;
  readonly lastEventSequence: number;
  readonly sizeBytes: number;
}
