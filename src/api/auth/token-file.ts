import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LineCounter, parseDocument, isSeq } from 'yaml';
import { ConfigurationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { expandScopes, USER_PRESET } from './scopes';

/**
 * One entry of AUTH_TOKENS_FILE (a JSON list): only the token's SHA-256 is stored, never the token.
 * `created_at`, `expires_at` and `revoked_at` are optional ISO-8601 instants (ADR 0032): an expired
 * or revoked token authenticates nobody; revoked entries stay in the file as a record.
 */
export interface TokenFileEntry {
  readonly token_sha256: string;
  readonly tenant_id: string;
  readonly principal_id: string;
  readonly scopes: readonly string[] | string;
  readonly created_at?: string;
  readonly expires_at?: string | null;
  readonly revoked_at?: string | null;
}

/** A usable token of the file: its principal and when it stops working (null: never). */
export interface TokenGrant {
  readonly principal: Principal;
  readonly expiresAtMs: number | null;
}

export function sha256Hex(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A token's public id: the first 12 hex digits of its hash (what `agent auth token list|revoke` show and take). */
export function tokenId(entry: Pick<TokenFileEntry, 'token_sha256'>): string {
  return entry.token_sha256.slice(0, 12);
}

/** Reads the file's JSON list; ConfigurationError naming the file when it cannot. */
export function readTokenEntries(file: string): { entries: unknown[]; text: string } {
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
  return { entries: parsed, text };
}

/** The 1-based line each list element starts on (JSON is YAML: the yaml parser keeps source ranges). */
function entryLines(text: string): number[] {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter });
  if (!isSeq(doc.contents)) return [];
  return doc.contents.items.map((item) => {
    const offset = (item as { range?: [number, number, number] }).range?.[0] ?? 0;
    return counter.linePos(offset).line;
  });
}

const instant = (v: unknown): v is string => typeof v === 'string' && !Number.isNaN(Date.parse(v));

/** Checks one entry; returns it typed, or throws ConfigurationError naming the file and line. */
function checkEntry(raw: unknown, where: string, details: Record<string, unknown>): TokenFileEntry {
  const fail = (msg: string, extra: Record<string, unknown> = {}) =>
    new ConfigurationError(`${where}: ${msg}`, { ...details, ...extra });
  const e = raw as Partial<TokenFileEntry> | null;
  if (!e || typeof e !== 'object' || Array.isArray(e)) throw fail('is not an object');
  if (typeof e.token_sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(e.token_sha256))
    throw fail('token_sha256 must be 64 lowercase hex digits');
  if (typeof e.tenant_id !== 'string' || e.tenant_id === '') throw fail('tenant_id must be a non-empty string');
  if (typeof e.principal_id !== 'string' || e.principal_id === '')
    throw fail('principal_id must be a non-empty string');
  const s = e.scopes;
  if (!(typeof s === 'string' || (Array.isArray(s) && s.every((x) => typeof x === 'string'))))
    throw fail(`scopes must be "${USER_PRESET}" or a list of scope names`);
  for (const key of ['created_at', 'expires_at', 'revoked_at'] as const) {
    const v = e[key];
    if (v !== undefined && v !== null && !instant(v)) throw fail(`${key} must be an ISO-8601 date-time or null`);
  }
  return e as TokenFileEntry;
}

/**
 * Reads and validates a tokens file into the usable tokens by hash (revoked entries are left out;
 * expired ones are kept with their expiry, which the authenticator checks per request). Throws
 * ConfigurationError naming the file and the line of the offending entry.
 */
export function loadTokenFile(file: string, toolScopes: readonly string[]): Map<string, TokenGrant> {
  const { entries, text } = readTokenEntries(file);
  const lines = entryLines(text);
  const out = new Map<string, TokenGrant>();
  entries.forEach((raw, i) => {
    const line = lines[i];
    const where = `AUTH_TOKENS_FILE ${file}${line ? ` line ${line}` : ''} (entry #${i})`;
    const details = { file, index: i, ...(line ? { line } : {}) };
    const e = checkEntry(raw, where, details);
    const { scopes, unknown } = expandScopes(e.scopes, toolScopes);
    if (unknown.length > 0)
      throw new ConfigurationError(`${where}: unknown scope(s) ${unknown.join(', ')}`, { ...details, unknown });
    if (e.revoked_at) return;
    out.set(e.token_sha256, {
      principal: { tenantId: e.tenant_id, principalId: e.principal_id, roles: new Set(), scopes },
      expiresAtMs: e.expires_at ? Date.parse(e.expires_at) : null,
    });
  });
  return out;
}

/** Every entry of the file, each checked (but scope names are not: the API checks them at load). */
export function readCheckedEntries(file: string): TokenFileEntry[] {
  const { entries, text } = readTokenEntries(file);
  const lines = entryLines(text);
  return entries.map((raw, i) => {
    const line = lines[i];
    return checkEntry(raw, `${file}${line ? ` line ${line}` : ''} (entry #${i})`, { file, index: i });
  });
}

/** Writes the list atomically (temp file + rename), owner-only. */
export function writeTokenEntries(file: string, entries: readonly TokenFileEntry[]): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(entries, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/**
 * Creates a random bearer token, appends its hash to `file` (created with mode 0600 when missing)
 * and returns the token: the only time it is ever shown. `expiresAt`: when it stops working.
 */
export function addTokenToFile(
  file: string,
  entry: { tenantId: string; principalId: string; scopes: readonly string[]; expiresAt?: string | null },
  toolScopes: readonly string[],
  now: Date = new Date(),
): string {
  const { unknown } = expandScopes(entry.scopes, toolScopes);
  if (unknown.length > 0) throw new ConfigurationError(`unknown scope(s) ${unknown.join(', ')}`, { unknown });
  if (entry.tenantId === '' || entry.principalId === '')
    throw new ConfigurationError('tenant and principal must not be empty', {});
  if (entry.expiresAt !== undefined && entry.expiresAt !== null && !instant(entry.expiresAt))
    throw new ConfigurationError('the expiry must be an ISO-8601 date-time', {});
  const existing = fs.existsSync(file) ? (readTokenEntries(file).entries as TokenFileEntry[]) : [];
  const token = `agc_${randomBytes(32).toString('base64url')}`;
  const scopes = entry.scopes.length === 1 && entry.scopes[0] === USER_PRESET ? USER_PRESET : [...entry.scopes];
  writeTokenEntries(file, [
    ...existing,
    {
      token_sha256: sha256Hex(token),
      tenant_id: entry.tenantId,
      principal_id: entry.principalId,
      scopes,
      created_at: now.toISOString(),
      ...(entry.expiresAt ? { expires_at: new Date(entry.expiresAt).toISOString() } : {}),
    },
  ]);
  return token;
}
