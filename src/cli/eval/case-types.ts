import type { EventType } from '../../domain/events/payloads';
import type { RunLimits } from '../../domain/run/limits';

/** The statuses a run can end in; an eval case expects one of them. */
export const TERMINAL_RUN_STATUSES = ['completed', 'failed', 'cancelled', 'interrupted'] as const;
export type TerminalRunStatus = (typeof TERMINAL_RUN_STATUSES)[number];

/** What the harness does to a run while it executes (plan §20, "interventions"). */
export const INTERVENTION_ACTIONS = [
  'cancel',
  'crash_worker',
  'approve',
  'deny',
  'provide_input',
  'review_retry',
  'review_fail',
  'disconnect_sse',
] as const;
export type InterventionAction = (typeof INTERVENTION_ACTIONS)[number];

/**
 * Fires `action` once, when the `occurrence`-th event of type `atEvent` of the run is observed
 * (`disconnect_sse`: when the harness's own SSE client receives it).
 */
export interface Intervention {
  readonly atEvent: EventType;
  readonly occurrence: number;
  readonly action: InterventionAction;
  /** The text of `provide_input` (the answer) and the reason of `deny`; null otherwise. */
  readonly text?: string | null;
}

/** One `expected.tool_calls` entry: calls of `name` whose arguments contain `argumentsSubset`. */
export interface ToolCallExpectation {
  readonly name: string;
  /** Exact number of matching calls; null means "at least one". */
  readonly count: number | null;
  readonly argumentsSubset: Readonly<Record<string, unknown>> | null;
}

/** One `expected.artifacts` entry: an `artifact.created` event with this name (and checksum/type). */
export interface ArtifactExpectation {
  readonly name: string;
  readonly sha256: string | null;
  readonly mediaType: string | null;
}

/**
 * The deterministic assertions of plan §20.2 (camelCase of the YAML keys). Every key is optional;
 * an absent key asserts nothing. See docs in evals/README.md for the exact semantics of each.
 */
/** `expected.children`: the child runs of `delegate.run` or of consensus rounds (issue 32). */
export interface ChildrenExpectation {
  /** The children's terminal statuses in creation order. */
  readonly statuses?: readonly string[];
  /** The parent's model calls and tokens are its own plus every child's. */
  readonly usageSummed?: boolean;
  /** The children's model-call limits together fit in what the parent had left when it delegated. */
  readonly budgetCarved?: boolean;
  /** Event counts summed over every child's events. */
  readonly eventCounts?: Readonly<Partial<Record<EventType, number>>>;
}

export interface Expected {
  readonly terminalStatus?: TerminalRunStatus;
  readonly finalTextContains?: readonly string[];
  readonly finalTextMatches?: string;
  readonly toolCalls?: readonly ToolCallExpectation[];
  readonly exactToolNames?: readonly string[];
  readonly forbiddenToolCalls?: readonly string[];
  readonly maximumSteps?: number;
  readonly maximumModelCalls?: number;
  readonly maximumToolCalls?: number;
  readonly expectedErrorCode?: string;
  readonly eventOrder?: readonly EventType[];
  readonly eventCounts?: Readonly<Partial<Record<EventType, number>>>;
  readonly approvalRequested?: boolean;
  readonly approvalNotRequested?: boolean;
  readonly noUnauthorizedSideEffects?: boolean;
  readonly toolExecutions?: Readonly<Record<string, number>>;
  readonly artifacts?: readonly ArtifactExpectation[];
  readonly toolResultTrust?: Readonly<Record<string, string>>;
  /** Every model request of the session recorded a context build within a declared window. */
  readonly contextWithinLimit?: boolean;
  readonly contextCompactionsAtLeast?: number;
  /** Every compaction's source sequences name conversation events of the session. */
  readonly summaryProvenanceValid?: boolean;
  /** The session log still holds every submitted message, in order (compaction removed nothing). */
  readonly conversationReplayable?: boolean;
  /** Every pair of executions of these tools overlapped in time: each started before the other ended. */
  readonly toolExecutionsOverlap?: readonly string[];
  readonly children?: ChildrenExpectation;
  /** The SSE client that disconnected mid-run got, after Last-Event-ID, exactly the rest of the log. */
  readonly sseReplayExact?: boolean;
}

/** A message submitted (and driven to completion) in the case's session before its own input. */
export interface PrecedingTurn {
  readonly text: string;
  /** The fixture that answers it; the case's `model_fixture` when absent. */
  readonly modelFixture: string | null;
}

/** A validated evaluation case, one per `evals/cases/NN_name.yaml` file. */
export interface EvalCase {
  /** The file name without extension, e.g. `02_calculator_tool`: how results and `--case` name it. */
  readonly id: string;
  /** The `name` field (the part of the id after the number). */
  readonly name: string;
  readonly description: string;
  /** The file the case was loaded from, for messages. */
  readonly file: string;
  readonly agentId: string;
  readonly input: {
    readonly text: string;
    readonly repeatWithSameIdempotencyKey: boolean;
    /** Expanded (`repeat`) turns submitted, one after another, before `text`. */
    readonly precedingTurns: readonly PrecedingTurn[];
  };
  /** Fixture under config/model-fixtures; the run's model policy is `fake:<modelFixture>`. */
  readonly modelFixture: string;
  readonly limits: Partial<RunLimits>;
  readonly interventions: readonly Intervention[];
  /** Why the case cannot run yet (its feature does not exist); null for runnable cases. */
  readonly pending: string | null;
  /** Per-case timeout override in seconds; null means the runner's default. */
  readonly timeoutSeconds: number | null;
  readonly expected: Expected;
}
