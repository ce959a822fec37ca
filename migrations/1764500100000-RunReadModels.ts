import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Revision 2: run, checkpoint, tool-invocation, approval, model-call and artifact tables.
 * The partial unique index enforces at most one non-terminal run per session (plan §27.5).
 */
export class RunReadModels1764500100000 implements MigrationInterface {
  name = 'RunReadModels1764500100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE runs (
        id uuid PRIMARY KEY,
        session_id uuid NOT NULL,
        tenant_id text NOT NULL,
        principal_id text NOT NULL,
        parent_run_id uuid,
        agent_id text NOT NULL,
        agent_version integer NOT NULL,
        model_policy text NOT NULL,
        status text NOT NULL,
        priority integer NOT NULL DEFAULT 100,
        attempts integer NOT NULL DEFAULT 0,
        scheduled_for timestamptz,
        step_count integer NOT NULL DEFAULT 0,
        model_call_count integer NOT NULL DEFAULT 0,
        tool_call_count integer NOT NULL DEFAULT 0,
        limits jsonb NOT NULL,
        usage jsonb NOT NULL,
        user_message_id uuid,
        final_text text,
        lease_owner text,
        lease_epoch bigint NOT NULL DEFAULT 0,
        lease_expires_at timestamptz,
        cancel_requested_at timestamptz,
        deadline_at timestamptz,
        failure jsonb,
        idempotency_key text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        started_at timestamptz,
        completed_at timestamptz
      )`);
    await q.query(`CREATE INDEX runs_status_created_idx ON runs (status, created_at)`);
    await q.query(`CREATE INDEX runs_lease_expires_idx ON runs (lease_expires_at) WHERE status = 'running'`);
    await q.query(`CREATE INDEX runs_session_created_idx ON runs (session_id, created_at)`);
    await q.query(`CREATE INDEX runs_claim_idx ON runs (priority, created_at) WHERE status = 'queued'`);
    await q.query(`
      CREATE UNIQUE INDEX runs_one_active_per_session ON runs (session_id)
      WHERE status NOT IN ('completed', 'failed', 'cancelled')`);
    await q.query(`
      CREATE TABLE checkpoints (
        id bigserial PRIMARY KEY,
        run_id uuid NOT NULL,
        version integer NOT NULL,
        state jsonb NOT NULL,
        last_event_sequence bigint NOT NULL,
        created_at timestamptz NOT NULL,
        CONSTRAINT checkpoints_run_version_key UNIQUE (run_id, version)
      )`);
    await q.query(`
      CREATE TABLE tool_invocations (
        id uuid PRIMARY KEY,
        run_id uuid NOT NULL,
        session_id uuid NOT NULL,
        tenant_id text NOT NULL,
        step_number integer NOT NULL,
        provider_call_id text NOT NULL,
        tool_name text NOT NULL,
        tool_version text,
        arguments jsonb NOT NULL,
        normalized_arguments_hash text NOT NULL,
        idempotency_key text NOT NULL,
        status text NOT NULL,
        side_effect text,
        risk text,
        idempotency_class text,
        policy_decision jsonb,
        result jsonb,
        error jsonb,
        effect_sent_at timestamptz,
        started_at timestamptz,
        completed_at timestamptz,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT tool_invocations_idempotency_key_key UNIQUE (idempotency_key)
      )`);
    await q.query(`CREATE INDEX tool_invocations_run_idx ON tool_invocations (run_id, step_number)`);
    await q.query(`
      CREATE TABLE approvals (
        id uuid PRIMARY KEY,
        run_id uuid NOT NULL,
        session_id uuid NOT NULL,
        tenant_id text NOT NULL,
        principal_id text NOT NULL,
        tool_invocation_id uuid,
        status text NOT NULL,
        action_kind text NOT NULL,
        risk text,
        request jsonb NOT NULL,
        resolution jsonb,
        policy_version text,
        revalidated_policy_version text,
        expires_at timestamptz,
        created_at timestamptz NOT NULL,
        resolved_at timestamptz,
        resolved_by text
      )`);
    await q.query(`CREATE INDEX approvals_tenant_status_idx ON approvals (tenant_id, status, created_at)`);
    await q.query(`CREATE INDEX approvals_run_idx ON approvals (run_id)`);
    await q.query(`CREATE INDEX approvals_expiry_idx ON approvals (expires_at) WHERE status = 'pending'`);
    await q.query(`
      CREATE TABLE model_calls (
        id uuid PRIMARY KEY,
        run_id uuid NOT NULL,
        session_id uuid NOT NULL,
        tenant_id text NOT NULL,
        step_number integer NOT NULL,
        attempt_number integer NOT NULL,
        provider text NOT NULL,
        model text NOT NULL,
        status text NOT NULL,
        prefix_hash text,
        uncached_input_tokens integer NOT NULL DEFAULT 0,
        cached_input_tokens integer NOT NULL DEFAULT 0,
        cache_write_tokens integer NOT NULL DEFAULT 0,
        output_tokens integer NOT NULL DEFAULT 0,
        reasoning_tokens integer NOT NULL DEFAULT 0,
        cost numeric NOT NULL DEFAULT 0,
        cost_source text,
        stop_reason text,
        latency_ms integer,
        error jsonb,
        trace_id text,
        started_at timestamptz NOT NULL,
        completed_at timestamptz
      )`);
    await q.query(`CREATE INDEX model_calls_run_idx ON model_calls (run_id, step_number)`);
    await q.query(`
      CREATE TABLE artifacts (
        id uuid PRIMARY KEY,
        tenant_id text NOT NULL,
        principal_id text NOT NULL,
        session_id uuid NOT NULL,
        run_id uuid,
        name text NOT NULL,
        media_type text NOT NULL,
        storage_uri text NOT NULL,
        sha256 text NOT NULL,
        size_bytes bigint NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX artifacts_session_idx ON artifacts (tenant_id, session_id, created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['artifacts', 'model_calls', 'approvals', 'tool_invocations', 'checkpoints', 'runs']) {
      await q.query(`DROP TABLE ${t}`);
    }
  }
}
