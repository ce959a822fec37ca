import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Revision 1: the append-only event log, the session stream (which owns the per-session sequence),
 * agent versions and projection watermarks. Structural only, so `down` is safe.
 */
export class EventStore1764500000000 implements MigrationInterface {
  name = 'EventStore1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE agents (
        id text NOT NULL,
        version integer NOT NULL,
        name text NOT NULL,
        instructions text NOT NULL,
        model_policy text NOT NULL,
        enabled_tools jsonb NOT NULL DEFAULT '[]',
        enabled_skills jsonb NOT NULL DEFAULT '[]',
        policy_profile text NOT NULL,
        limits jsonb NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (id, version)
      )`);
    await q.query(`
      CREATE TABLE sessions (
        id uuid PRIMARY KEY,
        tenant_id text NOT NULL,
        principal_id text NOT NULL,
        agent_id text NOT NULL,
        agent_version integer NOT NULL,
        status text NOT NULL,
        title text,
        metadata jsonb NOT NULL DEFAULT '{}',
        next_event_sequence bigint NOT NULL DEFAULT 0,
        active_run_id uuid,
        last_run_id uuid,
        message_count integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX sessions_owner_updated_idx ON sessions (tenant_id, principal_id, updated_at)`);
    await q.query(
      `CREATE INDEX sessions_owner_created_idx ON sessions (tenant_id, principal_id, created_at DESC, id DESC)`,
    );
    await q.query(`CREATE INDEX sessions_agent_created_idx ON sessions (agent_id, created_at)`);
    await q.query(`
      CREATE TABLE events (
        id bigserial PRIMARY KEY,
        session_id uuid NOT NULL,
        run_id uuid,
        sequence bigint NOT NULL,
        event_type text NOT NULL,
        payload_schema_version integer NOT NULL,
        payload jsonb NOT NULL,
        actor_type text NOT NULL,
        actor_id text,
        tenant_id text NOT NULL,
        trace_id text,
        transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
        created_at timestamptz NOT NULL,
        CONSTRAINT events_session_sequence_key UNIQUE (session_id, sequence)
      )`);
    await q.query(`CREATE INDEX events_run_idx ON events (run_id, id)`);
    await q.query(`CREATE INDEX events_type_created_idx ON events (event_type, created_at)`);
    await q.query(`CREATE INDEX events_global_position_idx ON events (transaction_id, id)`);
    await q.query(`
      CREATE TABLE projection_watermarks (
        name text PRIMARY KEY,
        version integer NOT NULL,
        position bigint NOT NULL DEFAULT 0,
        transaction_id xid8,
        rebuilt_at timestamptz,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE idempotency_keys (
        tenant_id text NOT NULL,
        principal_id text NOT NULL,
        scope text NOT NULL,
        key text NOT NULL,
        request_hash text NOT NULL,
        session_id uuid NOT NULL,
        run_id uuid,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, principal_id, scope, key)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_keys`);
    await q.query(`DROP TABLE projection_watermarks`);
    await q.query(`DROP TABLE events`);
    await q.query(`DROP TABLE sessions`);
    await q.query(`DROP TABLE agents`);
  }
}
