import type { Principal } from '../../../domain/principal';
import type { Database } from '../database';
import { UUID_PATTERN } from '../keyset-cursor';

/** The per-principal registries whose rows a principal lists, reads and removes as its own. */
export type OwnedTable = 'devices' | 'webhooks';

/**
 * The owner-scoped reads and removal shared by the device and webhook registries: every statement
 * names the principal's tenant and principal, so another owner's row is simply not found, and an
 * id that is not a UUID is not found either (never a database error).
 */
export async function listOwned(
  db: Database,
  table: OwnedTable,
  principal: Principal,
): Promise<Record<string, unknown>[]> {
  const r = await db.query(
    `SELECT * FROM ${table} WHERE tenant_id = $1 AND principal_id = $2 ORDER BY created_at, id`,
    [principal.tenantId, principal.principalId],
  );
  return r.rows;
}

export async function getOwned(
  db: Database,
  table: OwnedTable,
  principal: Principal,
  id: string,
): Promise<Record<string, unknown> | null> {
  if (!UUID_PATTERN.test(id)) return null;
  const r = await db.query(`SELECT * FROM ${table} WHERE id = $1 AND tenant_id = $2 AND principal_id = $3`, [
    id,
    principal.tenantId,
    principal.principalId,
  ]);
  return r.rows[0] ?? null;
}

export async function removeOwned(db: Database, table: OwnedTable, principal: Principal, id: string): Promise<boolean> {
  if (!UUID_PATTERN.test(id)) return false;
  const r = await db.query(`DELETE FROM ${table} WHERE id = $1 AND tenant_id = $2 AND principal_id = $3`, [
    id,
    principal.tenantId,
    principal.principalId,
  ]);
  return (r.rowCount ?? 0) > 0;
}
