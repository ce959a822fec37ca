import type { CheckpointState, StoredCheckpoint } from '../../../domain/run/checkpoint';
import type { CheckpointStore } from '../../../ports/run-store';
import type { Database } from '../database';

export class PgCheckpointStore implements CheckpointStore {
  constructor(private readonly db: Database) {}

  async latest(runId: string): Promise<StoredCheckpoint | null> {
    const res = await this.db.query<{
      version: number;
      state: CheckpointState;
      last_event_sequence: string;
      size: number;
    }>(
      `SELECT version, state, last_event_sequence, octet_length(state::text) AS size
         FROM checkpoints WHERE run_id = $1 ORDER BY version DESC LIMIT 1`,
      [runId],
    );
    const r = res.rows[0];
    return r
      ? {
          runId,
          version: r.version,
          state: r.state,
          lastEventSequence: Number(r.last_event_sequence),
          sizeBytes: r.size,
        }
      : null;
  }
}
