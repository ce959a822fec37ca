import { createHash, createPublicKey, randomUUID, type KeyObject } from 'node:crypto';
import { ConflictError, ValidationError } from '../../../domain/errors';
import type { Principal } from '../../../domain/principal';
import type { DeviceRecord, DeviceRegistry } from '../../../ports/devices';
import type { Database } from '../database';
import { getOwned, listOwned, removeOwned } from './owned-rows';
import { isoOf } from '../keyset-cursor';

const MAX_KEY_CHARS = 4096;
const CURVES: Record<string, string> = { prime256v1: 'ec-p256', secp384r1: 'ec-p384' };

const badKey = (message: string) => new ValidationError(message, { field: 'public_key' });

/** A PEM `PUBLIC KEY` or base64 (or base64url) DER SPKI, parsed by node:crypto; anything else refused. */
function parseKey(raw: string): KeyObject {
  const text = raw.trim();
  if (text.length === 0 || text.length > MAX_KEY_CHARS)
    throw badKey(`public_key must be 1 to ${MAX_KEY_CHARS} characters`);
  try {
    if (text.startsWith('-----BEGIN PUBLIC KEY-----')) return createPublicKey({ key: text, format: 'pem' });
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) throw new Error('not base64');
    return createPublicKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'spki' });
  } catch {
    throw badKey('public_key must be a PEM "PUBLIC KEY" or the base64 DER SPKI of an EC P-256/P-384 or Ed25519 key');
  }
}

/** The key's type name, or a refusal for an algorithm a push transport cannot use. */
function keyTypeOf(key: KeyObject): string {
  if (key.asymmetricKeyType === 'ed25519') return 'ed25519';
  const curve = key.asymmetricKeyDetails?.namedCurve;
  if (key.asymmetricKeyType === 'ec' && curve !== undefined && CURVES[curve]) return CURVES[curve];
  throw badKey(
    `public_key: ${key.asymmetricKeyType ?? 'this'} keys are not supported; use EC P-256, EC P-384 or Ed25519`,
  );
}

const toRecord = (r: Record<string, unknown>): DeviceRecord => ({
  id: String(r.id),
  name: String(r.name),
  publicKey: String(r.public_key),
  keyType: String(r.key_type),
  fingerprint: String(r.fingerprint),
  createdAt: isoOf(r.created_at),
});

/** The `devices` table (issue 31 item 5): configuration, not events, like webhooks. */
export class PgDevices implements DeviceRegistry {
  constructor(private readonly db: Database) {}

  async register(principal: Principal, name: string, publicKey: string): Promise<DeviceRecord> {
    const trimmed = typeof name === 'string' ? name.trim() : '';
    if (trimmed.length === 0 || trimmed.length > 100 || /\p{Cc}/u.test(trimmed))
      throw new ValidationError('name must be 1 to 100 characters, without control characters', { field: 'name' });
    if (typeof publicKey !== 'string') throw badKey('public_key must be a string');
    const key = parseKey(publicKey);
    const keyType = keyTypeOf(key);
    const der = key.export({ format: 'der', type: 'spki' });
    const pem = String(key.export({ format: 'pem', type: 'spki' }));
    const fingerprint = createHash('sha256').update(der).digest('hex');
    try {
      const r = await this.db.query(
        `INSERT INTO devices (id, tenant_id, principal_id, name, public_key, key_type, fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
        [randomUUID(), principal.tenantId, principal.principalId, trimmed, pem, keyType, fingerprint],
      );
      return toRecord(r.rows[0]);
    } catch (e) {
      if ((e as { code?: string }).code === '23505')
        throw new ConflictError('a device with this public key is registered already', { fingerprint });
      throw e;
    }
  }

  async list(principal: Principal): Promise<DeviceRecord[]> {
    return (await listOwned(this.db, 'devices', principal)).map(toRecord);
  }

  async get(principal: Principal, id: string): Promise<DeviceRecord | null> {
    const row = await getOwned(this.db, 'devices', principal, id);
    return row ? toRecord(row) : null;
  }

  remove(principal: Principal, id: string): Promise<boolean> {
    return removeOwned(this.db, 'devices', principal, id);
  }
}
