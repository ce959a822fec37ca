import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 35 (ADR 0054): `runs` rewritten with its columns ordered by how often they change.
 *
 * An update whose new row version stays on its page (every HOT update; `runs` has fillfactor 80) is
 * logged as the bytes between the first and the last column that changed: PostgreSQL leaves out the
 * common prefix and suffix. A run's row is ~900 bytes, and its per-step columns (counters, usage,
 * `updated_at`) sat on either side of the constant `limits` (~180 bytes) and several other constant
 * columns, which every update therefore logged again. Now the columns set when the run is queued come
 * first, the lifecycle ones (claim, start, lease) next, then the per-step ones, then those set only
 * when the run ends. Same columns, types, defaults, constraints and indexes; rows copied as they are.
 *
 * Also drops `sessions_agent_created_idx` (`(agent_id, created_at)`): no query reads sessions by agent,
 * and it took an entry on every non-HOT update of a session.
 */
const COLUMNS = `
  id uuid NOT NULL,
  session_id uuid NOT NULL,
  tenant_id text NOT NULL,
  principal_id text NOT NULL,
  parent_run_id uuid,
  agent_id text NOT NULL,
  agent_version integer NOT NULL,
  model_policy text NOT NULL,
  priority integer DEFAULT 100 NOT NULL,
  scheduled_for timestamp with time zone,
  limits jsonb NOT NULL,
  scopes jsonb DEFAULT '[]'::jsonb NOT NULL,
  user_message_id uuid,
  idempotency_key text,
  schedule_id uuid,
  first_sequence bigint,
  created_at timestamp with time zone NOT NULL,
  delegation jsonb,
  queued_behind uuid,
  started_at timestamp with time zone,
  deadline_at timestamp with time zone,
  cancel_requested_at timestamp with time zone,
  interrupt jsonb,
  lease_owner text,
  lease_epoch bigint DEFAULT 0 NOT NULL,
  attempts integer DEFAULT 0 NOT NULL,
  status text NOT NULL,
  lease_expires_at timestamp with time zone,
  step_count integer DEFAULT 0 NOT NULL,
  model_call_count integer DEFAULT 0 NOT NULL,
  tool_call_count integer DEFAULT 0 NOT NULL,
  last_sequence bigint,
  usage jsonb NOT NULL,
  updated_at timestamp with time zone NOT NULL,
  final_text text,
  failure jsonb,
  completed_at timestamp with time zone`;

const INDEXES = [
  `CREATE INDEX runs_claim_idx ON runs (priority, created_at) WHERE status = 'queued'`,
  `CREATE INDEX runs_completed_formation_idx ON runs (completed_at) WHERE status = 'completed'`,
  `CREATE UNIQUE INDEX runs_one_active_per_session ON runs (session_id)
     WHERE status NOT IN ('completed', 'failed', 'cancelled', 'interrupted') AND queued_behind IS NULL`,
  `CREATE INDEX runs_parent_idx ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL`,
  `CREATE INDEX runs_scheduled_tenant ON runs (tenant_id, created_at) WHERE priority = 200`,
  `CREATE INDEX runs_session_created_idx ON runs (session_id, created_at)`,
  `CREATE INDEX runs_status_created_idx ON runs (status, created_at)`,
  `CREATE INDEX runs_waiting_for_children_idx ON runs (id) WHERE status = 'waiting_for_children'`,
];

export class RunsColumnOrder1765440100000 implements MigrationInterface {
  name = 'RunsColumnOrder1765440100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE runs IN ACCESS EXCLUSIVE MODE`);
    await q.query(`CREATE TABLE runs_reordered (${COLUMNS}) WITH (fillfactor = 80)`);
    const names = (await q.query(
      `SELECT string_agg(attname, ', ' ORDER BY attnum) AS cols FROM pg_attribute
        WHERE attrelid = 'runs_reordered'::regclass AND attnum > 0 AND NOT attisdropped`,
    )) as { cols: string }[];
    await q.query(`INSERT INTO runs_reordered (${names[0].cols}) SELECT ${names[0].cols} FROM runs`);
    await q.query(`DROP TABLE runs`);
    await q.query(`ALTER TABLE runs_reordered RENAME TO runs`);
    await q.query(`ALTER TABLE runs ADD CONSTRAINT runs_pkey PRIMARY KEY (id)`);
    for (const index of INDEXES) await q.query(index);
    await q.query(
      `COMMENT ON COLUMN runs.scopes IS 'The run''s recorded scope set (run.queued v2, ADR 0032): sorted scope names its tool calls are authorized against.'`,
    );
    await q.query(`DROP INDEX sessions_agent_created_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    // The column order is not observable through any query the platform makes; only the index returns.
    await q.query(`CREATE INDEX sessions_agent_created_idx ON sessions (agent_id, created_at)`);
  }
}
