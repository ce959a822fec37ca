import { Client } from 'pg';

/** What the scale bench reads from PostgreSQL itself: connections, write transactions, WAL, the commit ceiling. */

export async function withClient<T>(url: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: url, application_name: 'agent-bench-probe' });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Server connections to the bench database by application_name (the probe's own excluded). */
export async function connectionsByName(url: string, db: string): Promise<Record<string, number>> {
  return withClient(url, async (c) => {
    const r = await c.query<{ name: string; n: number }>(
      `SELECT regexp_replace(application_name, ':.*$', ':*') AS name, count(*)::int AS n FROM pg_stat_activity
        WHERE datname = $1 AND application_name <> 'agent-bench-probe' GROUP BY 1`,
      [db],
    );
    return Object.fromEntries(r.rows.map((x) => [x.name || '(none)', x.n]));
  });
}

/** Samples every 100 ms until stopped; the peak of (all connections − this process's own). */
export function sampleConnections(url: string, db: string, own: Record<string, number>) {
  let peak = { total: 0, byName: {} as Record<string, number> };
  let running = true;
  const loop = (async () => {
    while (running) {
      const now = await connectionsByName(url, db);
      const byName = Object.fromEntries(
        Object.entries(now)
          .map(([k, v]) => [k, v - (own[k] ?? 0)] as const)
          .filter(([, v]) => v > 0),
      );
      const total = Object.values(byName).reduce((a, b) => a + b, 0);
      if (total > peak.total) peak = { total, byName };
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}

/**
 * Write transactions so far (each took a transaction id: reads never do, so the bench's own polling
 * is not counted) and the WAL position. `txid_current()` takes one id itself; the caller subtracts it.
 */
export async function dbCounters(url: string): Promise<{ commits: number; walBytes: number }> {
  return withClient(url, async (c) => {
    const r = await c.query<{ xid: string; wal: string }>(
      `SELECT txid_current()::text AS xid, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS wal`,
    );
    return { commits: Number(r.rows[0].xid), walBytes: Number(r.rows[0].wal) };
  });
}

/** The server's raw commit rate: 8 clients, each INSERT (autocommit) in a loop for 3 s. */
export async function commitCeiling(url: string): Promise<number> {
  await withClient(url, (c) =>
    c.query('CREATE TABLE IF NOT EXISTS bench_commit_ceiling (id bigserial, at timestamptz)'),
  );
  const end = Date.now() + 3000;
  const counts = await Promise.all(
    Array.from({ length: 8 }, () =>
      withClient(url, async (c) => {
        let n = 0;
        while (Date.now() < end) {
          await c.query('INSERT INTO bench_commit_ceiling (at) VALUES (now())');
          n++;
        }
        return n;
      }),
    ),
  );
  await withClient(url, (c) => c.query('DROP TABLE bench_commit_ceiling'));
  return counts.reduce((a, b) => a + b, 0) / 3;
}
