import { Pool, type PoolClient, type QueryResultRow } from 'pg';
import { asDatabaseUnavailable, isDatabaseUnavailable } from './unavailable';

/** Rethrows a failed query's error, as `DatabaseUnavailable` when the server is unreachable (a failover). */
const rethrow = (e: unknown): never => {
  throw asDatabaseUnavailable(e);
};

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

/**
 * How the pool reaches PostgreSQL (docs/operations/pooling.md, ADR 0030). `direct`: its own server
 * connections, so statements may be prepared once per connection. `transaction-pooler`: through
 * PgBouncer in transaction mode, where consecutive transactions of one client connection may run on
 * different server connections and PgBouncer 1.18 cannot track prepared statements: nothing is
 * prepared (named statements are sent unnamed, `transactionFromPrepared` inlines its statement).
 */
export type ConnectionMode = 'direct' | 'transaction-pooler';

/**
 * How long the pool waits (docs/operations/ha.md, ADR 0049). `connectMs`: for a connection, new or
 * pooled; `queryMs`: for a query's answer, 0 for no limit (the projection rebuild's own pool). Both
 * failures are `DatabaseUnavailable` (the API answers 503), and a client whose query timed out is
 * destroyed, never reused: node-postgres leaves it waiting for the lost answer.
 */
export interface PoolTimeouts {
  readonly connectMs: number;
  readonly queryMs: number;
}

export const DEFAULT_POOL_TIMEOUTS: PoolTimeouts = { connectMs: 10_000, queryMs: 60_000 };

/** The shared connection pool. One per process; each unit of work borrows its own client. */
export class Database {
  readonly pool: Pool;
  /** False behind a transaction pooler: every statement is sent unnamed (planned on each call). */
  readonly namedStatements: boolean;
  /** The statements `transactionFromPrepared` has prepared on each pooled connection. */
  private readonly prepared = new WeakMap<PoolClient, Set<string>>();
  constructor(
    readonly url: string,
    max = 10,
    readonly mode: ConnectionMode = 'direct',
    timeouts: PoolTimeouts = DEFAULT_POOL_TIMEOUTS,
  ) {
    this.namedStatements = mode === 'direct';
    // Pipelined connections (pg's public `pipeline` option): a query is written to the server as soon
    // as it is issued, not after the previous one's answer. Callers that await each query see no
    // difference; one that issues two together shares their round trip (an append and the COMMIT
    // behind it, PgAppender.appendAndCommit). Behind PgBouncer's transaction mode this stays safe:
    // the only pipelined batches end with their transaction's COMMIT, so PgBouncer keeps the client
    // on one server connection until the last answer (ADR 0030).
    this.pool = new Pool({
      connectionString: url,
      max,
      application_name: 'agent-core',
      pipeline: true,
      // Bounded waits (ADR 0049): a connection the server never answers, a full pool, or a socket
      // whose far end vanished mid-query would otherwise wait forever, and every later request of
      // the process would queue behind them (docs/operations/ha.md).
      connectionTimeoutMillis: timeouts.connectMs,
      query_timeout: timeouts.queryMs > 0 ? timeouts.queryMs : undefined,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    // An idle client that loses its server must not crash the process; the pool drops it.
    this.pool.on('error', () => undefined);
    // Nor may a checked-out one between two queries (a failover cuts every connection): its next
    // query fails instead (DatabaseUnavailable), and the pool discards it on release.
    this.pool.on('connect', (client) => client.on('error', () => undefined));
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
    if (typeof textOrConfig === 'string') return this.pool.query<R>(textOrConfig, values).catch(rethrow);
    return (
      this.namedStatements
        ? this.pool.query<R>(textOrConfig)
        : this.pool.query<R>(textOrConfig.text, textOrConfig.values)
    ).catch(rethrow);
  }

  /** Runs `fn` in one short transaction. Never await a model, tool or human inside it. */
  transaction<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    return this.inTransaction(fn).catch(rethrow);
  }

  private inTransaction<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    return this.withClient(async (client) => {
      await client.query('BEGIN');
      return await commitOrRollBack(client, () => fn(client));
    });
  }

  /**
   * Runs `fn` on a pooled client, then returns the client to the pool — or destroys it when `fn`
   * failed because its connection broke or a query on it timed out: such a client must never carry
   * another transaction.
   */
  private async withClient<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let failure: unknown;
    try {
      return await fn(client);
    } catch (e) {
      failure = e;
      throw e;
    } finally {
      client.release(failure !== undefined && isDatabaseUnavailable(failure) ? (failure as Error) : undefined);
    }
  }

  /**
   * Like `transaction`, with the transaction's first statement prepared once per pooled connection
   * (SQL `PREPARE`) and run as `BEGIN; EXECUTE name(args)` in one round trip: the server plans it
   * once per connection instead of on every call (a simple-protocol statement is parsed and planned
   * every time). `args` are SQL literals the caller has validated, in the statement's parameter
   * order; `fn` gets the statement's result. A connection that lost the statement (`DISCARD ALL`)
   * or whose plan no longer fits (a migration changed a table it reads) prepares it again and the
   * transaction is retried once.
   */
  transactionFromPrepared<T, R extends QueryResultRow = QueryResultRow>(
    statement: PreparedSql,
    args: readonly string[],
    fn: (client: PoolClient, first: { rows: R[]; rowCount: number | null }) => Promise<T | Committed<T>>,
  ): Promise<T> {
    if (!PREPARED_NAME.test(statement.name)) throw new Error(`invalid prepared statement name ${statement.name}`);
    const done = this.namedStatements
      ? this.transactionFromNamed(statement, args, fn)
      : this.transactionFromInlined(statement, args, fn);
    return done.catch(rethrow);
  }

  private async transactionFromNamed<T, R extends QueryResultRow>(
    statement: PreparedSql,
    args: readonly string[],
    fn: (client: PoolClient, first: { rows: R[]; rowCount: number | null }) => Promise<T | Committed<T>>,
  ): Promise<T> {
    const execute = `BEGIN; EXECUTE ${statement.name}${args.length > 0 ? `(${args.join(', ')})` : ''}`;
    return this.withClient(async (client) => {
      for (let attempt = 1; ; attempt++) {
        let names = this.prepared.get(client);
        if (!names) this.prepared.set(client, (names = new Set()));
        if (!names.has(statement.name)) {
          await client.query(`PREPARE ${statement.name} AS ${statement.text}`).catch((e: unknown) => {
            // Prepared on this connection before this process tracked it: it is there.
            if (pgError(e).code !== '42P05') throw e;
          });
          names.add(statement.name);
        }
        let results: { rows: R[]; rowCount: number | null }[];
        try {
          results = (await client.query<R>(execute)) as unknown as typeof results;
        } catch (e) {
          await client.query('ROLLBACK').catch(() => undefined);
          const code = pgError(e).code;
          // 26000: no such prepared statement; 0A000: cached plan must not change result type.
          if (attempt > 1 || (code !== '26000' && code !== '0A000')) throw e;
          names.delete(statement.name);
          await client.query(`DEALLOCATE ${statement.name}`).catch(() => undefined);
          continue;
        }
        return await commitOrRollBack(client, () => fn(client, results[1]));
      }
    });
  }

  /**
   * `transactionFromPrepared` behind a transaction pooler: `BEGIN; <statement with the arguments
   * inlined>` as one simple query, in the same single round trip, planned each time.
   */
  private async transactionFromInlined<T, R extends QueryResultRow>(
    statement: PreparedSql,
    args: readonly string[],
    fn: (client: PoolClient, first: { rows: R[]; rowCount: number | null }) => Promise<T | Committed<T>>,
  ): Promise<T> {
    const text = statement.text.replace(/\$(\d+)/g, (whole, n: string) => {
      const arg = args[Number(n) - 1];
      if (arg === undefined) throw new Error(`${statement.name}: no argument for ${whole}`);
      return `(${arg})`;
    });
    return this.withClient(async (client) => {
      let results: { rows: R[]; rowCount: number | null }[];
      try {
        results = (await client.query<R>(`BEGIN; ${text}`)) as unknown as typeof results;
      } catch (e) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw e;
      }
      return await commitOrRollBack(client, () => fn(client, results[1]));
    });
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** A statement `Database.transactionFromPrepared` prepares per connection under `name`. */
export interface PreparedSql {
  /** A plain SQL identifier, unique per statement text. */
  readonly name: string;
  /** The statement, with `$1`, `$2`, … for its (typed) parameters. */
  readonly text: string;
}

const PREPARED_NAME = /^[a-z_][a-z0-9_]*$/;

const COMMITTED = Symbol('committed');

/** What a transaction's `fn` returns when it committed the transaction itself (see `committed`). */
export interface Committed<T> {
  readonly [COMMITTED]: true;
  readonly value: T;
}

/**
 * Wraps the result of a `transaction`/`transactionFromPrepared` function that ended the
 * transaction itself (its last statement sent together with `COMMIT`, one round trip fewer): the
 * transaction then sends no COMMIT of its own and returns `value`.
 */
export function committed<T>(value: T): Committed<T> {
  return { [COMMITTED]: true, value };
}

function isCommitted<T>(r: T | Committed<T>): r is Committed<T> {
  return typeof r === 'object' && r !== null && COMMITTED in r;
}

/** Finishes an open transaction: COMMIT after `fn`, or ROLLBACK (and rethrow) when it fails. */
async function commitOrRollBack<T>(client: PoolClient, fn: () => Promise<T | Committed<T>>): Promise<T> {
  try {
    const result = await fn();
    if (isCommitted(result)) return result.value;
    await client.query('COMMIT');
    return result;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
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
