/**
 * Text embeddings for re-ranking memory recall (MEMORY_EMBEDDINGS_URL, ADR 0043). One vector per
 * input, in input order, all of one dimension. A failure rejects; the caller degrades to the SQL
 * ranking. Implementations never put their credentials in an error or a log.
 */
export interface Embeddings {
  embed(texts: readonly string[]): Promise<number[][]>;
}
