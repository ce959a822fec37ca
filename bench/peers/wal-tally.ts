import type { Client } from 'pg';

/**
 * What a span of work wrote to the WAL, from pg_walinspect: deterministic for a given workload
 * (unlike its wall time), so it is the primary figure of `bench -- peers`. Full-page images are
 * counted apart: they depend on when the last checkpoint ran, not on the workload.
 */
export interface WalTally {
  /** WAL record bytes, without full-page images. */
  readonly recordBytes: number;
  readonly fpiBytes: number;
  readonly heapInserts: number;
  readonly heapHotUpdates: number;
  readonly heapUpdates: number;
  /** B-tree entries written (leaf inserts, posting-list and split records included). */
  readonly indexEntries: number;
  readonly commits: number;
}

export async function walPosition(c: Client): Promise<string> {
  return (await c.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn')).rows[0].lsn;
}

/** The WAL between two positions, per record type (pg_get_wal_stats with per_record). */
export async function walBetween(c: Client, from: string, to: string): Promise<WalTally> {
  const { rows } = await c.query<{ t: string; n: string; rec: string; fpi: string }>(
    `SELECT "resource_manager/record_type" AS t, count::text AS n, record_size::text AS rec, fpi_size::text AS fpi
       FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true)`,
    [from, to],
  );
  const count = (re: RegExp) => rows.filter((r) => re.test(r.t)).reduce((s, r) => s + Number(r.n), 0);
  return {
    recordBytes: rows.reduce((s, r) => s + Number(r.rec), 0),
    fpiBytes: rows.reduce((s, r) => s + Number(r.fpi), 0),
    heapInserts: count(/^Heap\/INSERT/),
    heapHotUpdates: count(/^Heap\/HOT_UPDATE/),
    heapUpdates: count(/^Heap\/UPDATE/),
    indexEntries: count(/^Btree\/(INSERT_LEAF|INSERT_POST|INSERT_UPPER|SPLIT)/),
    commits: count(/^Transaction\/COMMIT/),
  };
}

/** `t` divided by `n` turns. */
export function perTurn(t: WalTally, n: number): WalTally {
  const d = (x: number) => x / n;
  return {
    recordBytes: d(t.recordBytes),
    fpiBytes: d(t.fpiBytes),
    heapInserts: d(t.heapInserts),
    heapHotUpdates: d(t.heapHotUpdates),
    heapUpdates: d(t.heapUpdates),
    indexEntries: d(t.indexEntries),
    commits: d(t.commits),
  };
}

/** Where a span's WAL went, by relation (table or index) and record type, largest first. */
export async function walByRelation(
  c: Client,
  from: string,
  to: string,
): Promise<{ relation: string; recordType: string; count: number; bytes: number }[]> {
  const { rows } = await c.query<{ relation: string; record_type: string; n: string; bytes: string }>(
    `WITH r AS (
       SELECT resource_manager || '/' || record_type AS record_type, record_length,
              (regexp_match(block_ref, 'rel \\d+/\\d+/(\\d+)'))[1]::oid AS filenode
         FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn))
     SELECT coalesce(c.relname, '(none)') AS relation, r.record_type, count(*)::text AS n, sum(record_length)::text AS bytes
       FROM r LEFT JOIN pg_class c ON c.relfilenode = r.filenode
      GROUP BY 1, 2 ORDER BY sum(record_length) DESC`,
    [from, to],
  );
  return rows.map((r) => ({
    relation: r.relation,
    recordType: r.record_type,
    count: Number(r.n),
    bytes: Number(r.bytes),
  }));
}
