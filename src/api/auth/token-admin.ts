import { ConfigurationError, NotFoundError, ValidationError } from '../../domain/errors';
import { readCheckedEntries, tokenId, writeTokenEntries, type TokenFileEntry } from './token-file';

/** One token as `agent auth token list` shows it: never the token, never its whole hash. */
export interface TokenListing {
  readonly id: string;
  readonly tenantId: string;
  readonly principalId: string;
  readonly scopes: readonly string[] | string;
  readonly createdAt: string | null;
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
  readonly status: 'active' | 'expired' | 'revoked';
}

function listing(e: TokenFileEntry, nowMs: number): TokenListing {
  const expired = e.expires_at ? Date.parse(e.expires_at) <= nowMs : false;
  return {
    id: tokenId(e),
    tenantId: e.tenant_id,
    principalId: e.principal_id,
    scopes: e.scopes,
    createdAt: e.created_at ?? null,
    expiresAt: e.expires_at ?? null,
    revokedAt: e.revoked_at ?? null,
    status: e.revoked_at ? 'revoked' : expired ? 'expired' : 'active',
  };
}

/** Every token of the file, in file order. */
export function listTokens(file: string, now: Date = new Date()): TokenListing[] {
  return readCheckedEntries(file).map((e) => listing(e, now.getTime()));
}

/**
 * Revokes the token whose id (`tokenId`, or a longer prefix of its hash, at least 8 hex digits)
 * is `id`: stamps `revoked_at` and rewrites the file atomically. Every API process re-reads the
 * file on its next request. Revoking a revoked token changes nothing (`alreadyRevoked`).
 */
export function revokeToken(
  file: string,
  id: string,
  now: Date = new Date(),
): { token: TokenListing; alreadyRevoked: boolean } {
  const wanted = id.trim().toLowerCase();
  if (!/^[0-9a-f]{8,64}$/.test(wanted))
    throw new ConfigurationError('a token id is 8 to 64 hex digits (see `agent auth token list`)', { id });
  const entries = readCheckedEntries(file);
  const matches = entries.filter((e) => e.token_sha256.startsWith(wanted));
  if (matches.length === 0) throw new NotFoundError(`no token with id ${wanted} in ${file}`, { id: wanted });
  if (matches.length > 1)
    throw new ConfigurationError(`token id ${wanted} matches ${matches.length} tokens; give more digits`, {
      id: wanted,
    });
  const target = matches[0];
  if (target.revoked_at) return { token: listing(target, now.getTime()), alreadyRevoked: true };
  const revoked: TokenFileEntry = { ...target, revoked_at: now.toISOString() };
  writeTokenEntries(
    file,
    entries.map((e) => (e === target ? revoked : e)),
  );
  return { token: listing(revoked, now.getTime()), alreadyRevoked: false };
}

const UNITS_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `30d`, `12h`, `90m`, `45s` → the instant that far from `now`; ValidationError otherwise. */
export function expiryFrom(opts: { expiresIn?: string; expiresAt?: string }, now = new Date()): string | null {
  if (opts.expiresIn !== undefined && opts.expiresAt !== undefined)
    throw new ValidationError('give --expires-in or --expires-at, not both', {});
  if (opts.expiresAt !== undefined) {
    const t = Date.parse(opts.expiresAt);
    if (Number.isNaN(t)) throw new ValidationError(`--expires-at ${opts.expiresAt} is not an ISO-8601 date-time`, {});
    if (t <= now.getTime()) throw new ValidationError(`--expires-at ${opts.expiresAt} is not in the future`, {});
    return new Date(t).toISOString();
  }
  if (opts.expiresIn === undefined) return null;
  const m = /^(\d{1,6})([smhd])$/.exec(opts.expiresIn.trim());
  if (!m || Number(m[1]) === 0)
    throw new ValidationError(
      `--expires-in ${opts.expiresIn} must be a positive number with s, m, h or d (e.g. 30d)`,
      {},
    );
  return new Date(now.getTime() + Number(m[1]) * UNITS_MS[m[2]]).toISOString();
}
