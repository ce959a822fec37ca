import { randomUUID } from 'node:crypto';
import { Client } from 'pg';

/**
 * The calculator turn written directly: six single-statement transactions into one append-only
 * table (the message and the queued run; the claim; the model's tool call; the tool's result; the
 * model's answer; the completion) — the floor any durable design pays for the same turn.
 */
const POINTS: readonly (readonly string[])[] = [
  ['session.created', 'user.message.created', 'run.queued'],
  ['run.claimed'],
  ['model.response.completed'],
  ['tool.call.completed'],
  ['model.response.completed'],
  ['assistant.message.completed', 'run.completed'],
];

export class DirectTurn {
  private constructor(private readonly c: Client) {}

  static async open(url: string): Promise<DirectTurn> {
    const c = new Client({ connectionString: url });
    await c.connect();
    await c.query(
      `CREATE TABLE IF NOT EXISTS bench_direct_events (session_id uuid, sequence int, event_type text, payload jsonb,
         created_at timestamptz DEFAULT now(), PRIMARY KEY (session_id, sequence))`,
    );
    return new DirectTurn(c);
  }

  static readonly transactions = POINTS.length;

  async turn(): Promise<void> {
    const sid = randomUUID();
    let seq = 0;
    for (const types of POINTS) {
      const values = types.map((_, k) => `($1, ${++seq}, $${k + 2}, '{"text":"What is 17 multiplied by 23?"}')`);
      await this.c.query(
        `INSERT INTO bench_direct_events (session_id, sequence, event_type, payload) VALUES ${values.join(', ')}`,
        [sid, ...types],
      );
    }
  }

  async close(): Promise<void> {
    await this.c.query('DROP TABLE bench_direct_events');
    await this.c.end();
  }
}
