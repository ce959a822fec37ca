import * as fs from 'node:fs';
import { AgentError, NotFoundError, ValidationError } from '../../domain/errors';
import type { ArtifactStore } from '../../ports/artifact-store';
import type { Clock, IdFactory } from '../../ports/clock';
import type { Logger } from '../../ports/logger';
import type { ExportFilters, ExportSummary, TrajectoryExportJob, TrajectoryExportJobs } from '../../ports/trajectory';
import { isoOf, isoOrNull, UUID_PATTERN, type Database } from '../postgres';
import { AtomicLineFile } from './export-file';
import type { TrajectoryExporter } from './exporter';

/** How often a running job's process moves its heartbeat. */
const HEARTBEAT_MS = 10_000;
/** A running (or still queued) job whose heartbeat is older than this lost its process. */
const STALE_SECONDS = 60;

interface JobRow {
  id: string;
  tenant_id: string;
  requested_by: string;
  filters: ExportFilters;
  status: TrajectoryExportJob['status'];
  artifact_id: string | null;
  summary: ExportSummary | null;
  error: { code: string; message: string } | null;
  created_at: Date;
  finished_at: Date | null;
}

/**
 * Export jobs behind `POST /v1/exports` (plan §31). A job runs in the API process that accepted it:
 * it streams the export into a temp file, stores the file as an artifact (source `trajectory.export`)
 * and records which principals' runs it contains, so a later withdrawal of consent can delete it.
 * Before the job is marked succeeded, the consent of every contained principal is re-checked under a
 * row lock; a consent changed during the export fails the job and expires its artifact.
 *
 * While a job runs, its process moves the job's `heartbeat_at` every 10 s. A job whose process died
 * (crash, SIGKILL) keeps `running` in its row; once its heartbeat is a minute old, reading the job
 * reports it failed with `interrupted` (and records that), so a client polling it gets an answer.
 */
export class PgExportJobs implements TrajectoryExportJobs {
  private readonly running = new Set<Promise<void>>();
  /** Ids of the jobs this process is running (their heartbeats). */
  private readonly active = new Set<string>();
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Database,
    private readonly exporter: TrajectoryExporter,
    private readonly artifacts: ArtifactStore,
    private readonly clock: Clock,
    private readonly ids: IdFactory,
    private readonly log: Logger,
  ) {}

  /** Validates, records the job and starts it; bad filters are refused before anything is recorded. */
  async create(tenantId: string, requestedBy: string, filters: ExportFilters): Promise<TrajectoryExportJob> {
    await this.exporter.validate(tenantId, filters);
    const id = this.ids.uuid();
    await this.db.query(
      `INSERT INTO trajectory_exports (id, tenant_id, requested_by, filters, status, created_at)
       VALUES ($1, $2, $3, $4, 'queued', $5)`,
      [id, tenantId, requestedBy, JSON.stringify(filters), this.clock.nowIso()],
    );
    const p = this.execute(id, tenantId, requestedBy, filters).catch((e: unknown) =>
      this.log.error('trajectory export job crashed', { exportId: id, error: String(e) }),
    );
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
    const job = await this.get(tenantId, id);
    return job;
  }

  async get(tenantId: string, id: string): Promise<TrajectoryExportJob> {
    if (typeof id !== 'string' || !UUID_PATTERN.test(id))
      throw new ValidationError(`export id is not a UUID: ${String(id)}`, { field: 'export_id' });
    await this.failIfInterrupted(tenantId, id);
    const res = await this.db.query<JobRow>(`SELECT * FROM trajectory_exports WHERE id = $1 AND tenant_id = $2`, [
      id,
      tenantId,
    ]);
    const r = res.rows[0];
    if (!r) throw new NotFoundError(`export ${id} not found`, { exportId: id });
    return {
      id: r.id,
      tenantId: r.tenant_id,
      requestedBy: r.requested_by,
      filters: r.filters,
      status: r.status,
      artifactId: r.status === 'succeeded' ? r.artifact_id : null,
      summary: r.summary,
      error: r.error,
      createdAt: isoOf(r.created_at),
      finishedAt: isoOrNull(r.finished_at),
    };
  }

  /**
   * Records a job whose process stopped before finishing it as failed (`interrupted`): it is still
   * `running` (or `queued`) and nothing has moved its heartbeat for STALE_SECONDS. Nothing else can
   * finish it: the export's partial file lived in that process.
   */
  private async failIfInterrupted(tenantId: string, id: string): Promise<void> {
    await this.db.query(
      `UPDATE trajectory_exports SET status = 'failed', error = $3, finished_at = $4
        WHERE id = $1 AND tenant_id = $2 AND status IN ('queued', 'running')
          AND coalesce(heartbeat_at, created_at) < now() - make_interval(secs => $5)`,
      [
        id,
        tenantId,
        JSON.stringify({
          code: 'interrupted',
          message:
            'the API process running this export stopped before it finished; nothing was kept, start a new export',
        }),
        this.clock.nowIso(),
        STALE_SECONDS,
      ],
    );
  }

  /** Moves the heartbeat of every job this process runs, while there are any. */
  private beat(id: string, running: boolean): void {
    if (running) this.active.add(id);
    else this.active.delete(id);
    if (this.active.size > 0 && this.heartbeat === null) {
      this.heartbeat = setInterval(() => {
        void this.db
          .query(
            `UPDATE trajectory_exports SET heartbeat_at = now() WHERE id = ANY($1::uuid[]) AND status = 'running'`,
            [[...this.active]],
          )
          .catch((e: unknown) => this.log.warn('export heartbeat failed', { error: String(e) }));
      }, HEARTBEAT_MS);
      this.heartbeat.unref();
    } else if (this.active.size === 0 && this.heartbeat !== null) {
      clearInterval(this.heartbeat);
      this.heartbeat = null;
    }
  }

  /** Resolves when every job started by this process has finished (shutdown, tests). */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private async execute(id: string, tenantId: string, requestedBy: string, filters: ExportFilters): Promise<void> {
    const started = await this.db.query(
      `UPDATE trajectory_exports SET status = 'running', heartbeat_at = now() WHERE id = $1 AND status = 'queued'`,
      [id],
    );
    if (started.rowCount === 0) return;
    this.beat(id, true);
    try {
      await this.run(id, tenantId, requestedBy, filters);
    } finally {
      this.beat(id, false);
    }
  }

  private async run(id: string, tenantId: string, requestedBy: string, filters: ExportFilters): Promise<void> {
    const file = AtomicLineFile.temporary();
    let artifactId: string | null = null;
    try {
      const { summary, consentVersions } = await this.exporter.export(tenantId, filters, file.write);
      const final = await file.commit();
      try {
        const meta = await this.artifacts.put(
          {
            tenantId,
            // Only the requester reads it through GET /v1/artifacts/{id}/content.
            principalId: requestedBy,
            name: `trajectories-${id}.jsonl`,
            mediaType: 'application/x-ndjson',
            source: 'trajectory.export',
          },
          fs.createReadStream(final),
        );
        artifactId = meta.id;
      } finally {
        await fs.promises.rm(final, { force: true });
      }
      const outcome = await this.db.transaction(async (client) => {
        const principals = [...consentVersions.keys()];
        const current = await client.query<{ principal_id: string; status: string; version: number }>(
          `SELECT principal_id, status, version FROM trajectory_consents
            WHERE tenant_id = $1 AND principal_id = ANY($2::text[]) FOR SHARE`,
          [tenantId, principals],
        );
        const now = new Map(current.rows.map((r) => [r.principal_id, r]));
        const changed = principals.filter((p) => {
          const c = now.get(p);
          return !c || c.status !== 'granted' || c.version !== consentVersions.get(p);
        });
        const job = await client.query<{ status: string }>(
          `SELECT status FROM trajectory_exports WHERE id = $1 FOR UPDATE`,
          [id],
        );
        // `deleted`: a principal withdrew consent meanwhile; `failed`: reported interrupted (a heartbeat
        // went stale while this process was stalled), which a client may already have acted on.
        if (changed.length > 0 || job.rows[0]?.status === 'deleted') return 'consent_changed' as const;
        if (job.rows[0]?.status !== 'running') return 'interrupted' as const;
        for (const p of principals)
          await client.query(
            `INSERT INTO trajectory_export_members (export_id, tenant_id, principal_id, runs) VALUES ($1, $2, $3, $4)`,
            [id, tenantId, p, summary.principals[p] ?? 0],
          );
        await client.query(
          `UPDATE trajectory_exports SET status = 'succeeded', artifact_id = $2, summary = $3, finished_at = $4
            WHERE id = $1`,
          [id, artifactId, JSON.stringify(summary), this.clock.nowIso()],
        );
        return 'succeeded' as const;
      });
      if (outcome === 'interrupted') {
        throw new ValidationError('the export was reported interrupted while it ran; nothing was kept', {
          reason: 'interrupted',
        });
      }
      if (outcome === 'consent_changed') {
        throw new ValidationError('consent of a principal in this export changed while it ran; nothing was kept', {
          reason: 'consent_changed',
        });
      }
    } catch (e) {
      await file.discard().catch(() => undefined);
      if (artifactId !== null) {
        await this.db.query(`UPDATE artifacts SET expires_at = now() - interval '1 second' WHERE id = $1`, [
          artifactId,
        ]);
        await this.artifacts.sweepExpired(this.clock.nowIso()).catch(() => undefined);
      }
      const error =
        e instanceof AgentError
          ? {
              code: e.code === 'validation_error' && typeof e.details.reason === 'string' ? e.details.reason : e.code,
              message: e.message,
            }
          : { code: 'internal_error', message: 'the export failed' };
      if (!(e instanceof AgentError)) this.log.error('trajectory export failed', { exportId: id, error: String(e) });
      await this.db.query(
        `UPDATE trajectory_exports SET status = CASE WHEN status = 'deleted' THEN 'deleted' ELSE 'failed' END,
                error = $2, finished_at = $3 WHERE id = $1`,
        [id, JSON.stringify(error), this.clock.nowIso()],
      );
    }
  }
}
