import { ConfigurationError } from '../domain/errors';

/** How memories are formed at the end of a run (MEMORY_FORMATION; ADR 0035). */
export type MemoryFormationMode = 'extractive' | 'model' | 'off';
const FORMATION_MODES: readonly MemoryFormationMode[] = ['extractive', 'model', 'off'];

/** Long-term memory settings (docs/memory.md); every knob is listed in .env.example. */
export interface MemorySettings {
  /** Memories in a session's snapshot at most (MEMORY_SNAPSHOT_ITEMS, default 20; 0: no snapshots). */
  readonly snapshotItems: number;
  /** End-of-run formation (MEMORY_FORMATION, default off). */
  readonly formation: MemoryFormationMode;
  /** The model policy model-assisted formation calls (MEMORY_FORMATION_MODEL_POLICY); null: the run's own. */
  readonly formationModelPolicy: string | null;
  /** An OpenAI-compatible base URL whose `/embeddings` re-ranks recall (MEMORY_EMBEDDINGS_URL); null: off. */
  readonly embeddingsUrl: string | null;
  readonly embeddingsModel: string;
  /** Bearer key for the embeddings endpoint (MEMORY_EMBEDDINGS_API_KEY); never logged. */
  readonly embeddingsApiKey: string | null;
}

export function loadMemorySettings(env: NodeJS.ProcessEnv): MemorySettings {
  const rawItems = (env.MEMORY_SNAPSHOT_ITEMS ?? '').trim();
  const snapshotItems = rawItems === '' ? 20 : Number(rawItems);
  if (!Number.isInteger(snapshotItems) || snapshotItems < 0 || snapshotItems > 200)
    throw new ConfigurationError(`MEMORY_SNAPSHOT_ITEMS must be an integer from 0 to 200, got "${rawItems}"`, {
      name: 'MEMORY_SNAPSHOT_ITEMS',
    });
  const rawMode = (env.MEMORY_FORMATION ?? '').trim() || 'off';
  if (!(FORMATION_MODES as readonly string[]).includes(rawMode))
    throw new ConfigurationError(`MEMORY_FORMATION must be extractive, model or off, got "${rawMode}"`, {
      name: 'MEMORY_FORMATION',
    });
  return {
    snapshotItems,
    formation: rawMode as MemoryFormationMode,
    formationModelPolicy: env.MEMORY_FORMATION_MODEL_POLICY?.trim() || null,
    embeddingsUrl: env.MEMORY_EMBEDDINGS_URL?.trim() || null,
    embeddingsModel: env.MEMORY_EMBEDDINGS_MODEL?.trim() || 'text-embedding-3-small',
    embeddingsApiKey: env.MEMORY_EMBEDDINGS_API_KEY?.trim() || null,
  };
}
