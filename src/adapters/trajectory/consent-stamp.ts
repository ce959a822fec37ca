import type { NewEvent } from '../../domain/events/payloads';
import type { Queryable } from '../postgres/database';

/**
 * The `run.consent_stamped` event written with a run's first `run.started` (plan §31, ADR 0016):
 * the principal's trajectory-export consent as it stood when the run started. `absent` when the
 * principal never recorded a choice (no consent is the default).
 */
export async function consentStamp(
  client: Queryable,
  runId: string,
  tenantId: string,
  principalId: string,
): Promise<NewEvent<'run.consent_stamped'>> {
  const res = await client.query<{ status: 'granted' | 'withdrawn'; version: number }>(
    `SELECT status, version FROM trajectory_consents WHERE tenant_id = $1 AND principal_id = $2`,
    [tenantId, principalId],
  );
  return consentStampOf(runId, principalId, res.rows[0] ?? null);
}

/** The stamp from the principal's consent row as already read (null: no choice recorded). */
export function consentStampOf(
  runId: string,
  principalId: string,
  row: { readonly status: 'granted' | 'withdrawn'; readonly version: number } | null,
): NewEvent<'run.consent_stamped'> {
  return {
    type: 'run.consent_stamped',
    runId,
    actorType: 'system',
    data: {
      principalId,
      trajectoryExport: row ? row.status : 'absent',
      consentVersion: row ? row.version : null,
    },
  };
}
