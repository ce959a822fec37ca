import { Pool, type PoolClient, type QueryResultRow } from 'pg';

/** Anything that can run a parameterised query: the pool or a client inside a transaction. */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: R[]; rowCount: number | null }>;
  /** A named (prepared once per connection) statement. */
  query<R extends QueryResultRow = QueryResultRow>(config: {
    name: string;
    text: string;
    values?: unknown[];
  }): Promise<{ rows: R[]; rowCount: number | null }>;
}

/** The shared connection pool. One per process; each unit of work borrows its own client. */
export class Database {
  readonly pool: Pool;
  constructor(
    readonly url: string,
    max = 10,
  ) {
    this.pool = new Pool({ connectionString: url, max, application_name: 'agent-core' });
    // An idle client that loses its server must not crash the process; the pool drops it.
    this.pool.on('error', () => undefined);
  }

  query<R extends QueryResultRow = QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: R[]; rowCount: number | null }>;
  query<R extends QueryResultRow = QueryResultRow>(config: {
    name: string;
    text: string;
    values?: unknown[];
  }): Promise<{ rows: R[]; rowCount: number | null }>;
  query<R extends QueryResultRow = QueryResultRow>(
    textOrConfig: string | { name: string; text: string; values?: unknown[] },
    values?: unknown[],
  ): Promise<{ rows: R[]; rowCount: number | null }> {
    return typeof textOrConfig === 'string'
      ? this.pool.query<R>(textOrConfig, values)
      : this.pool.query<R>(textOrConfig);
  }

  /** Runs `fn` in one short transaction. Never await a model, tool or human inside it. */
  async transaction<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }

  /**
   * Like `transaction`, with the transaction's first statement sent in the same round trip as its
   * `BEGIN` (one simple-protocol message, so `firstSql` takes no parameters: the caller inlines
   * only values it has validated as literals). `fn` gets that statement's result.
   */
  async transactionFrom<T, R extends QueryResultRow = QueryResultRow>(
    firstSql: string,
    fn: (client: PoolClient, first: { rows: R[]; rowCount: number | null }) => Promise<T>,
  ): Promise<T> {
    const client = await this.pool.connect();
    try {
      const results = (await client.query<R>(`BEGIN; ${firstSql}`)) as unknown as {
        rows: R[];
        rowCount: number | null;
      }[];
      const result = await fn(client, results[1]);
      await client.query('COMMIT');
      return result;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** The PostgreSQL error code and constraint of a failed query, when it is one. */
export function pgError(e: unknown): { code?: string; constraint?: string } {
  if (e && typeof e === 'object') {
    const { code, constraint } = e as { code?: unknown; constraint?: unknown };
    return {
      code: typeof code === 'string' ? code : undefined,
      constraint: typeof constraint === 'string' ? constraint : undefined,
    };
  }
  return {};
}
