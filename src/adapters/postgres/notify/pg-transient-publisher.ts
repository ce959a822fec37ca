import type { TransientPublisher } from '../../../ports/run-store';
import type { Database } from '../database';

/** NOTIFY payloads must stay under 8000 bytes; we chunk text well below that. */
const MAX_CHUNK_CHARS = 1500;
export const TRANSIENT_CHANNEL = 'agent_transient';

/** Publishes text/reasoning deltas through NOTIFY: live only, never stored, no SSE id. */
export class PgTransientPublisher implements TransientPublisher {
  constructor(private readonly db: Database) {}

  async publish(frame: {
    sessionId: string;
    runId: string;
    kind: 'text_delta' | 'reasoning_delta';
    text: string;
  }): Promise<void> {
    for (let i = 0; i < frame.text.length; i += MAX_CHUNK_CHARS) {
      const payload = JSON.stringify({
        s: frame.sessionId,
        r: frame.runId,
        k: frame.kind,
        t: frame.text.slice(i, i + MAX_CHUNK_CHARS),
      });
      // Named: parsed and planned once per pooled connection, not for every delta.
      await this.db.query({
        name: 'agent_transient_notify',
        text: 'SELECT pg_notify($1, $2)',
        values: [TRANSIENT_CHANNEL, payload],
      });
    }
  }
}
