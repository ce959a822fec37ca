import { ValidationError } from '../../domain/errors';
import type { ArtifactStore } from '../../ports/artifact-store';
import type { Clock } from '../../ports/clock';
import type { ConsentChange, ConsentRecord, ConsentRegistry, ConsentStatus } from '../../ports/trajectory';
import { isoOrNull, type Database, type Queryable } from '../postgres';

const PRINCIPAL = /^[A-Za-z0-9._:@-]{1,200}$/;

/**
 * Per-principal trajectory-export consent (plan §31, ADR 0016). Every change bumps `version` and is
 * kept in `trajectory_consent_changes`. Withdrawal reaches backward: in the same transaction it marks
 * every stored export that contains the principal's runs deleted and expires its artifact, which the
 * artifact sweeper then removes (the deletion is routed through `expires_at`, plan §31).
 */
export class PgConsentRegistry implements ConsentRegistry {
  constructor(
    private readonly db: Database,
    private readonly artifacts: ArtifactStore | null,
    private readonly clock: Clock,
  ) {}

  async get(tenantId: string, principalId: string): Promise<ConsentRecord> {
    checkPrincipal(principalId);
    return read(this.db, tenantId, principalId);
  }

  grant(tenantId: string, principalId: string, changedBy: string): Promise<ConsentChange> {
    return this.change(tenantId, principalId, 'granted', changedBy);
  }

  withdraw(tenantId: string, principalId: string, changedBy: string): Promise<ConsentChange> {
    return this.change(tenantId, principalId, 'withdrawn', changedBy);
  }

  private async change(
    tenantId: string,
    principalId: string,
    status: ConsentStatus,
    changedBy: string,
  ): Promise<ConsentChange> {
    checkPrincipal(principalId);
    const now = this.clock.nowIso();
    const result = await this.db.transaction(async (client) => {
      // The row lock orders this change against an export job's final consent check (FOR SHARE).
      await client.query(
        `INSERT INTO trajectory_consents (tenant_id, principal_id, status, version, changed_at, changed_by)
         VALUES ($1, $2, $3, 1, $4, $5)
         ON CONFLICT (tenant_id, principal_id) DO UPDATE
           SET status = EXCLUDED.status, version = trajectory_consents.version + 1,
               changed_at = EXCLUDED.changed_at, changed_by = EXCLUDED.changed_by`,
        [tenantId, principalId, status, now, changedBy],
      );
      if (status === 'withdrawn') {
        const res = await client.query<{ id: string; artifact_id: string | null }>(
          `UPDATE trajectory_exports x SET status = 'deleted'
            WHERE x.tenant_id = $1 AND x.status IN ('succeeded', 'running', 'queued')
              AND EXISTS (SELECT 1 FROM trajectory_export_members m
                           WHERE m.export_id = x.id AND m.tenant_id = $1 AND m.principal_id = $2)
            RETURNING x.id, x.artifact_id`,
          [tenantId, principalId],
        );
        const deleted = res.rows.map((r) => r.artifact_id).filter((a): a is string => a !== null);
        if (deleted.length > 0)
          await client.query(
            `UPDATE artifacts SET expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND id = ANY($2::uuid[])`,
            [tenantId, deleted],
          );
        const record = await read(client, tenantId, principalId);
        await history(client, record, res.rows.length);
        return { record, exportsDeleted: res.rows.length, artifacts: deleted.length };
      }
      const record = await read(client, tenantId, principalId);
      await history(client, record, 0);
      return { record, exportsDeleted: 0, artifacts: 0 };
    });
    if (result.artifacts > 0 && this.artifacts) await this.artifacts.sweepExpired(this.clock.nowIso());
    return { record: result.record, exportsDeleted: result.exportsDeleted };
  }
}

function checkPrincipal(principalId: string): void {
  if (typeof principalId !== 'string' || !PRINCIPAL.test(principalId))
    throw new ValidationError('principal must be 1 to 200 characters of letters, digits and . _ : @ -', {
      field: 'principal',
    });
}

async function read(q: Queryable, tenantId: string, principalId: string): Promise<ConsentRecord> {
  const res = await q.query<{ status: ConsentStatus; version: number; changed_at: Date; changed_by: string }>(
    `SELECT status, version, changed_at, changed_by FROM trajectory_consents WHERE tenant_id = $1 AND principal_id = $2`,
    [tenantId, principalId],
  );
  const r = res.rows[0];
  return r
    ? {
        tenantId,
        principalId,
        status: r.status,
        version: r.version,
        changedAt: isoOrNull(r.changed_at),
        changedBy: r.changed_by,
      }
    : { tenantId, principalId, status: 'absent', version: null, changedAt: null, changedBy: null };
}

async function history(q: Queryable, r: ConsentRecord, exportsDeleted: number): Promise<void> {
  await q.query(
    `INSERT INTO trajectory_consent_changes (tenant_id, principal_id, status, version, changed_at, changed_by, exports_deleted)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [r.tenantId, r.principalId, r.status, r.version, r.changedAt, r.changedBy, exportsDeleted],
  );
}
