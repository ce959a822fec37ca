import type { ModelFailureKind, StopReason } from '../../../domain/model/model-events';

/**
 * The validated shape of a fake-model fixture (`config/model-fixtures/<name>.yaml`, plan §10.3).
 * Turn i answers the model call of run step i+1; past the end, the last turn repeats.
 */
export interface FakeFixture {
  readonly name: string;
  readonly description: string;
  /** Minimum latency of every call for this fixture (the provider's latencyMs may be larger). */
  readonly latencyMs: number;
  /** The model's context window as the router reports it (`context_limit`), or null (none). */
  readonly contextLimit: number | null;
  readonly turns: readonly FakeTurn[];
}

export interface FakeTurn {
  /** Streamed in chunks; `{{step}}` here and in tool arguments becomes the run step. */
  readonly text: string;
  readonly toolCalls: readonly FakeToolCall[];
  /** Attempt N (1-based) fails with entry N-1 while N <= length; later attempts play the turn. */
  readonly failAttempts: readonly FakeFailure[];
  /** End the stream without a terminal event (malformed provider output). */
  readonly malformed: boolean;
  /** Never answer: wait for the attempt's abort signal or deadline, then fail with a timeout. */
  readonly hang: boolean;
  readonly usage: Partial<FakeUsage>;
  readonly stopReason: StopReason | null;
  /**
   * Strings the request (system, tools and conversation as JSON) must contain; when one is missing
   * the call fails permanently with code `fixture_expectation_failed`, naming it (request assertions).
   */
  readonly expectRequestContains: readonly string[];
  /** Strings the request must not contain (same failure when one is present). */
  readonly expectRequestExcludes: readonly string[];
}

export interface FakeToolCall {
  readonly name: string;
  /** Exactly what is streamed as the argument JSON (invalid on purpose when `raw_arguments` is used). */
  readonly rawArguments: string;
  readonly id: string | null;
}

export interface FakeFailure {
  readonly kind: ModelFailureKind;
  readonly message: string;
  readonly code: string | null;
}

export interface FakeUsage {
  readonly input: number;
  readonly output: number;
  readonly cached: number;
  readonly cacheWrite: number;
  readonly reasoning: number;
}
