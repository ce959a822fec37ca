import type { NewEvent } from '../../domain/events/payloads';

/**
 * The `run.consent_stamped` event written with a run's first `run.started` (plan §31, ADR 0016):
 * the principal's trajectory-export consent as it stood when the run started, from the consent row
 * the claim statement read (null: the principal never recorded a choice; no consent is the
 * default, `absent`).
 */
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
