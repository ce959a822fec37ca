import { Client } from 'pg';

export interface Notification {
  readonly channel: string;
  readonly payload: string;
}

const MAX_BATCH = 200;

/**
 * Sends NOTIFYs after the data transaction has committed, batched on one dedicated connection.
 *
 * A NOTIFY inside the data transaction makes PostgreSQL hold a database-wide lock from the
 * notification queue insert until the commit record is flushed, which serialises every committing
 * appender (measured here: 8 concurrent writers fell from ~5,100 to ~1,650 commits/s). Sending it
 * afterwards keeps group commit working. The price: a process that dies between its commit and the
 * NOTIFY loses that nudge — which is why every consumer also polls or re-reads on reconnect
 * (NOTIFY only nudges; the log is the truth). See docs/adr/0004-single-statement-append.md.
 */
export class BatchedNotifier {
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;
  private pending: Notification[] = [];
  private flushing: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly url: string) {}

  /** Queues notifications; resolves once they have been sent (callers normally do not wait). */
  send(batch: readonly Notification[]): Promise<void> {
    if (this.closed || batch.length === 0) return Promise.resolve();
    this.pending.push(...batch);
    return this.flush();
  }

  private flush(): Promise<void> {
    this.flushing ??= this.drain().finally(() => {
      this.flushing = null;
      if (this.pending.length > 0 && !this.closed) void this.flush();
    });
    return this.flushing;
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0 && !this.closed) {
      const batch = this.pending.splice(0, MAX_BATCH);
      try {
        const client = await this.connection();
        // One prepared statement for every batch size: parsed and planned once per connection.
        await client.query({
          name: 'agent_notify_batch',
          text: 'SELECT count(pg_notify(c, p)) FROM unnest($1::text[], $2::text[]) AS n(c, p)',
          values: [batch.map((n) => n.channel), batch.map((n) => n.payload)],
        });
      } catch {
        // The connection broke: drop it and move on. Consumers poll, so a lost nudge only delays them.
        const c = this.client;
        this.client = null;
        await c?.end().catch(() => undefined);
      }
    }
  }

  private connection(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      const c = new Client({ connectionString: this.url, application_name: 'agent-core-notifier' });
      c.on('error', () => {
        if (this.client === c) this.client = null;
      });
      await c.connect();
      this.client = c;
      return c;
    })().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  async close(): Promise<void> {
    await this.flushing?.catch(() => undefined);
    this.closed = true;
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => undefined);
  }
}
