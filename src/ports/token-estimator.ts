/**
 * Counts tokens for the context engine's budget (plan §11.3: "the initial token estimator may be
 * approximate, but it must be behind a replaceable interface"). Implementations must be fast and
 * pure: the engine counts every history item once and caches the figure.
 */
export interface TokenEstimator {
  /** What counted, for the record: `approx-chars` or `tiktoken:o200k_base`. */
  readonly id: string;
  /** Tokens of `text` as the model family's tokenizer would count it (an estimate for `approx`). */
  count(text: string): number;
}

/** Picks the most accurate estimator known for a provider's model; never fails (falls back to approx). */
export interface TokenEstimatorProvider {
  forModel(provider: string, model: string): TokenEstimator;
}
