import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ConfigurationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { expandScopes, USER_PRESET } from './scopes';

/** One line of AUTH_TOKENS_FILE: only the token's SHA-256 is stored, never the token. */
export interface TokenFileEntry {
  readonly token_sha256: string;
  readonly tenant_id: string;
  readonly principal_id: string;
  readonly scopes: readonly string[] | string;
}

export function sha256Hex(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Reads and validates a tokens file into principals by token hash. Throws ConfigurationError with a clear message. */
export function loadTokenFile(file: string, toolScopes: readonly string[]): Map<string, Principal> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigurationError(
      `AUTH_TOKENS_FILE ${file} cannot be read: ${e instanceof Error ? e.message : String(e)}`,
      { file },
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigurationError(
      `AUTH_TOKENS_FILE ${file} is not valid JSON (expected a list of {token_sha256, tenant_id, principal_id, scopes})`,
      { file },
    );
  }
  if (!Array.isArray(parsed)) throw new ConfigurationError(`AUTH_TOKENS_FILE ${file} must hold a JSON list`, { file });
  const out = new Map<string, Principal>();
  parsed.forEach((raw: unknown, i) => {
    const e = raw as Partial<TokenFileEntry> | null;
    const where = `AUTH_TOKENS_FILE ${file} entry #${i}`;
    if (!e || typeof e !== 'object') throw new ConfigurationError(`${where} is not an object`, { file, index: i });
    if (typeof e.token_sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(e.token_sha256))
      throw new ConfigurationError(`${where}: token_sha256 must be 64 lowercase hex digits`, { file, index: i });
    if (typeof e.tenant_id !== 'string' || e.tenant_id === '')
      throw new ConfigurationError(`${where}: tenant_id must be a non-empty string`, { file, index: i });
    if (typeof e.principal_id !== 'string' || e.principal_id === '')
      throw new ConfigurationError(`${where}: principal_id must be a non-empty string`, { file, index: i });
    const scopesRaw = e.scopes;
    if (!(
      typeof scopesRaw === 'string' ||
      (Array.isArray(scopesRaw) && scopesRaw.every((s) => typeof s === 'string'))
    )) {
      throw new ConfigurationError(`${where}: scopes must be "${USER_PRESET}" or a list of scope names`, {
        file,
        index: i,
      });
    }
    const { scopes, unknown } = expandScopes(scopesRaw, toolScopes);
    if (unknown.length > 0)
      throw new ConfigurationError(`${where}: unknown scope(s) ${unknown.join(', ')}`, { file, index: i, unknown });
    out.set(e.token_sha256, { tenantId: e.tenant_id, principalId: e.principal_id, roles: new Set(), scopes });
  });
  return out;
}

/**
 * Creates a random bearer token, appends its hash to `file` (created with mode 0600 when missing)
 * and returns the token: the only time it is ever shown.
 */
export function addTokenToFile(
  file: string,
  entry: { tenantId: string; principalId: string; scopes: readonly string[] },
  toolScopes: readonly string[],
): string {
  const { unknown } = expandScopes(entry.scopes, toolScopes);
  if (unknown.length > 0) throw new ConfigurationError(`unknown scope(s) ${unknown.join(', ')}`, { unknown });
  if (entry.tenantId === '' || entry.principalId === '')
    throw new ConfigurationError('tenant and principal must not be empty', {});
  const existing: TokenFileEntry[] = fs.existsSync(file)
    ? (JSON.parse(fs.readFileSync(file, 'utf8')) as TokenFileEntry[])
    : [];
  if (!Array.isArray(existing)) throw new ConfigurationError(`${file} must hold a JSON list`, { file });
  const token = `agc_${randomBytes(32).toString('base64url')}`;
  const scopes = entry.scopes.length === 1 && entry.scopes[0] === USER_PRESET ? USER_PRESET : [...entry.scopes];
  existing.push({ token_sha256: sha256Hex(token), tenant_id: entry.tenantId, principal_id: entry.principalId, scopes });
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(existing, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
  return token;
}
