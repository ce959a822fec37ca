import type { Embeddings } from '../../ports/embeddings';

export interface OpenAiEmbeddingsOptions {
  /** The base URL; requests go to `{baseUrl}/embeddings`. */
  readonly baseUrl: string;
  readonly model: string;
  /** Sent as `Authorization: Bearer …`; never logged, never in an error. */
  readonly apiKey: string | null;
  /** Recall runs on the context build's path: a slow endpoint is a failed one. */
  readonly timeoutMs?: number;
}

/** Why a response is not `{data: [{index, embedding: number[]}]}` with one vector per input, or null. */
function vectorsOf(body: unknown, n: number): number[][] | string {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data) || data.length !== n) return `expected ${n} embeddings`;
  const out: number[][] = new Array<number[]>(n);
  for (const [k, item] of data.entries()) {
    const e = item as { index?: unknown; embedding?: unknown } | null;
    const index = typeof e?.index === 'number' ? e.index : k;
    if (!Number.isInteger(index) || index < 0 || index >= n || out[index]) return `embedding ${k} has a bad index`;
    if (!Array.isArray(e?.embedding) || !e.embedding.every((x) => typeof x === 'number' && Number.isFinite(x)))
      return `embedding ${k} is not a list of numbers`;
    out[index] = e.embedding as number[];
  }
  const dim = out[0]?.length ?? 0;
  if (dim === 0 || out.some((v) => v.length !== dim)) return 'embeddings differ in dimension';
  return out;
}

/**
 * An OpenAI-compatible embeddings endpoint: `POST {baseUrl}/embeddings` with `{model, input}`.
 * Errors name the status or the malformed part, never the key or the texts.
 */
export class OpenAiEmbeddings implements Embeddings {
  private readonly url: string;

  constructor(private readonly options: OpenAiEmbeddingsOptions) {
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/embeddings`;
  }

  async embed(texts: readonly string[]): Promise<number[][]> {
    if (texts.length === 0) return [];
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: this.options.model, input: texts }),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 3000),
      });
    } catch (e) {
      throw new Error(`embeddings endpoint unreachable: ${e instanceof Error ? e.name : 'error'}`, { cause: e });
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`embeddings endpoint answered HTTP ${res.status}`);
    }
    let body: unknown;
    try {
      body = await res.json();
    } catch (e) {
      throw new Error('embeddings endpoint answered something other than JSON', { cause: e });
    }
    const vectors = vectorsOf(body, texts.length);
    if (typeof vectors === 'string') throw new Error(`embeddings endpoint answered malformed data: ${vectors}`);
    return vectors;
  }
}
