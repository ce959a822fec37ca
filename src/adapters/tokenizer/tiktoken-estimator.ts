import { createRequire } from 'node:module';
import type { Tiktoken, TiktokenBPE } from 'js-tiktoken/lite';
import type { TokenEstimator, TokenEstimatorProvider } from '../../ports/token-estimator';

const load = createRequire(__filename);

type EncodingName = 'o200k_base' | 'cl100k_base';

/**
 * Which OpenAI encoding a model id uses: o200k for the GPT-4o/4.1/5 and o-series families,
 * cl100k for GPT-4 and GPT-3.5; null for anything else (not an OpenAI tokenizer we know).
 */
export function encodingForModel(model: string): EncodingName | null {
  const m = model.toLowerCase().replace(/^openai\//, '');
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|chatgpt-4o|gpt-oss)/.test(m)) return 'o200k_base';
  if (/^(gpt-4|gpt-3\.5|text-embedding-3|text-embedding-ada)/.test(m)) return 'cl100k_base';
  return null;
}

/**
 * Exact token counts for OpenAI model families through `js-tiktoken` (pure JS BPE). Encodings are
 * loaded lazily - the rank tables are several MB - on the first count for a family, and kept.
 * Providers whose tokenizer has no well-kept JS port (Anthropic, local models) get the approximate
 * (fallback) estimator. `openai`-compatible gateways (OpenRouter's `openai/gpt-...` ids) use it too.
 */
export class TiktokenEstimators implements TokenEstimatorProvider {
  private readonly encoders = new Map<EncodingName, TokenEstimator>();

  /** `fallback` counts for every other provider (the context engine's approximate estimator). */
  constructor(private readonly fallback: TokenEstimator) {}

  forModel(provider: string, model: string): TokenEstimator {
    const name = provider === 'openai' || provider === 'openrouter' ? encodingForModel(model) : null;
    if (name === null) return this.fallback;
    let estimator = this.encoders.get(name);
    if (!estimator) {
      estimator = lazyEncoder(name);
      this.encoders.set(name, estimator);
    }
    return estimator;
  }
}

function lazyEncoder(name: EncodingName): TokenEstimator {
  let encoder: Tiktoken | null = null;
  return {
    id: `tiktoken:${name}`,
    count(text: string): number {
      if (text.length === 0) return 0;
      if (encoder === null) {
        const { Tiktoken: Encoder } = load('js-tiktoken/lite') as typeof import('js-tiktoken/lite');
        const ranks = load(`js-tiktoken/ranks/${name}`) as TiktokenBPE | { default: TiktokenBPE };
        encoder = new Encoder('default' in ranks ? ranks.default : ranks);
      }
      return encoder.encode(text).length;
    },
  };
}
