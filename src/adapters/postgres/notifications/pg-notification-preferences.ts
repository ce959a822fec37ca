import type { NotificationKind } from '../../../domain/notifications/triggers';
import {
  defaultPreferences,
  parsePreferences,
  type DeliveryChannel,
  type NotificationPreferences,
} from '../../../domain/notifications/preferences';
import type { Principal } from '../../../domain/principal';
import type { NotificationPreferenceStore } from '../../../ports/notifications';
import { isIanaZone } from '../../notifications';
import type { Database } from '../database';

interface PreferenceRow {
  kinds: Record<string, DeliveryChannel>;
  content: 'none' | 'full';
  quiet_start: string | null;
  quiet_end: string | null;
  quiet_zone: string | null;
}

function fromRow(r: PreferenceRow | undefined): NotificationPreferences {
  const d = defaultPreferences();
  if (!r) return d;
  const kinds = { ...d.kinds };
  for (const k of Object.keys(kinds) as NotificationKind[]) if (r.kinds[k]) kinds[k] = r.kinds[k];
  return {
    kinds,
    content: r.content,
    quietHours:
      r.quiet_zone && r.quiet_start && r.quiet_end
        ? { start: r.quiet_start, end: r.quiet_end, zone: r.quiet_zone }
        : null,
  };
}

/** `notification_preferences`: one row per principal that set any (configuration, not events). */
export class PgNotificationPreferences implements NotificationPreferenceStore {
  constructor(private readonly db: Database) {}

  async get(principal: Principal): Promise<NotificationPreferences> {
    const r = await this.db.query<PreferenceRow>(
      `SELECT kinds, content, quiet_start, quiet_end, quiet_zone FROM notification_preferences
        WHERE tenant_id = $1 AND principal_id = $2`,
      [principal.tenantId, principal.principalId],
    );
    return fromRow(r.rows[0]);
  }

  async put(principal: Principal, raw: unknown): Promise<NotificationPreferences> {
    // Validated whole before anything is written: a refusal stores nothing.
    const p = parsePreferences(raw, isIanaZone);
    const r = await this.db.query<PreferenceRow>(
      `INSERT INTO notification_preferences (tenant_id, principal_id, kinds, content, quiet_start, quiet_end, quiet_zone)
       VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7)
       ON CONFLICT (tenant_id, principal_id) DO UPDATE SET kinds = EXCLUDED.kinds, content = EXCLUDED.content,
         quiet_start = EXCLUDED.quiet_start, quiet_end = EXCLUDED.quiet_end, quiet_zone = EXCLUDED.quiet_zone,
         updated_at = now()
       RETURNING kinds, content, quiet_start, quiet_end, quiet_zone`,
      [
        principal.tenantId,
        principal.principalId,
        JSON.stringify(p.kinds),
        p.content,
        p.quietHours?.start ?? null,
        p.quietHours?.end ?? null,
        p.quietHours?.zone ?? null,
      ],
    );
    return fromRow(r.rows[0]);
  }
}
