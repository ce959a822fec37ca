/**
 * Structured working state of a session (plan Milestone 7's suggested WorkingState): carried in
 * every compaction checkpoint, rendered in Region B of every request, updated by the optional
 * internal `plan.update` tool. Plain data only, so it can live in an event payload.
 */
export interface TaskState {
  readonly description: string;
  readonly status: 'pending' | 'in_progress' | 'done' | 'blocked';
}

export interface Fact {
  readonly statement: string;
  /** Session sequence of the event the fact came from, when it came from one. */
  readonly sourceSequence: number | null;
}

export interface WorkingState {
  readonly objective: string | null;
  readonly constraints: readonly string[];
  readonly tasks: readonly TaskState[];
  readonly establishedFacts: readonly Fact[];
  readonly openQuestions: readonly string[];
  readonly nextAction: string | null;
}

export const EMPTY_WORKING_STATE: WorkingState = {
  objective: null,
  constraints: [],
  tasks: [],
  establishedFacts: [],
  openQuestions: [],
  nextAction: null,
};

export const TASK_STATUSES: readonly TaskState['status'][] = ['pending', 'in_progress', 'done', 'blocked'];

/**
 * A compaction's structured summary of the dialogue it replaced (plan §11.4). Every entry keeps
 * the session sequence number(s) of the events it came from; untrusted tool output is elided,
 * never paraphrased; provider-opaque reasoning is never an input.
 */
export interface CompactionSummary {
  /** The current user goal (the latest user message summarised or pinned). */
  readonly goal: string | null;
  readonly constraints: readonly string[];
  readonly unresolvedQuestions: readonly string[];
  /** Tool results later steps may still need (excerpts; untrusted ones elided). */
  readonly toolResults: readonly {
    readonly toolName: string;
    readonly excerpt: string;
    readonly sourceSequence: number;
  }[];
  /** One line per summarised message, oldest first, possibly excerpted. */
  readonly dialogue: readonly {
    readonly role: 'user' | 'assistant';
    readonly excerpt: string;
    readonly sourceSequence: number;
  }[];
  /** How many spans of untrusted content were elided. */
  readonly elidedSpans: number;
}

/** Which compactor produced a summary. */
export type CompactorKind = 'extractive' | 'model_assisted';

/** Per-class token counts of one context build (plan §11.3 classes plus Region B parts). */
export interface ContextTokenCounts {
  readonly platform: number;
  readonly agent: number;
  readonly tools: number;
  readonly workingState: number;
  readonly retrieved: number;
  readonly summary: number;
  readonly history: number;
  readonly reserveOutput: number;
}

/** What every model request records about the context it was built from (model.request.started v3). */
export interface ContextBuildRecord {
  /** The model's context window, or null when its profile declares none (no enforcement). */
  readonly limit: number | null;
  /** Input tokens of the request plus the output reserve. */
  readonly total: number;
  readonly estimator: string;
  readonly tokens: ContextTokenCounts;
  /** Increments whenever Region A (its SHA-256 is `prefixHash`) changes; only at a run boundary. */
  readonly prefixEpoch: number;
  /** How many compactions ran for this build (0, 1 or 2). */
  readonly compactions: number;
  /** History units sent / left out (summarised earlier). */
  readonly historyItems: number;
}
