import type { TokenEstimator, TokenEstimatorProvider } from '../ports/token-estimator';

/**
 * The fast default estimator: about four characters of English per token, rounded up, with
 * non-ASCII characters (which BPE tokenizers split finely) counted as one token each. It runs in
 * one pass over the string without allocation, and over-counts slightly on purpose: an estimate
 * that is too low is what produces provider 400s.
 */
export const APPROX_ESTIMATOR: TokenEstimator = {
  id: 'approx-chars',
  count(text: string): number {
    if (text.length === 0) return 0;
    let ascii = 0;
    let other = 0;
    for (let i = 0; i < text.length; i++) {
      if (text.charCodeAt(i) < 128) ascii++;
      else other++;
    }
    return Math.ceil(ascii / 4) + other;
  },
};

/** Every model gets the approximate estimator. */
export const APPROX_ESTIMATORS: TokenEstimatorProvider = { forModel: () => APPROX_ESTIMATOR };
