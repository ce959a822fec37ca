import * as fs from 'node:fs';
import { ADMIN_SCOPE } from '../api/auth/scopes';
import { loadTokenFile } from '../api/auth/token-file';
import type { Settings } from '../config/settings';
import { LOCAL_PRINCIPAL } from '../domain/principal';
import type { Logger } from '../ports/logger';
import type { PrincipalDirectory } from '../ports/principal-directory';

/**
 * The principal directory a scheduler asks at every firing (ports/principal-directory.ts). Token
 * mode: the tokens file, re-read when it changes (checked at most once a second), so a revoked
 * token or a narrowed scope list takes effect on the next firing; a principal's scopes are the
 * union of its tokens'. Dev mode: the one local principal, as the API authenticates it.
 */
export function principalDirectory(
  settings: Pick<Settings, 'authMode' | 'authTokensFile'>,
  toolScopes: readonly string[],
  log: Logger,
): PrincipalDirectory {
  if (settings.authMode === 'dev') {
    const scopes: ReadonlySet<string> = new Set([...LOCAL_PRINCIPAL.scopes, ADMIN_SCOPE]);
    return {
      scopesOf: (tenantId, principalId) =>
        tenantId === LOCAL_PRINCIPAL.tenantId && principalId === LOCAL_PRINCIPAL.principalId ? scopes : null,
    };
  }
  const file = settings.authTokensFile;
  let byPrincipal = new Map<string, Set<string>>();
  let mtimeMs = -1;
  let checkedAt = 0;
  const reload = () => {
    const now = Date.now();
    if (now - checkedAt < 1000 || file === null) return;
    checkedAt = now;
    try {
      const m = fs.statSync(file).mtimeMs;
      if (m === mtimeMs) return;
      const next = new Map<string, Set<string>>();
      for (const { principal: p, expiresAtMs } of loadTokenFile(file, toolScopes).values()) {
        if (expiresAtMs !== null && expiresAtMs <= now) continue; // an expired token grants nothing
        const key = `${p.tenantId}\u0000${p.principalId}`;
        next.set(key, new Set([...(next.get(key) ?? []), ...p.scopes]));
      }
      byPrincipal = next;
      mtimeMs = m;
    } catch (e) {
      // Fail closed: with no readable directory, no principal exists.
      byPrincipal = new Map();
      mtimeMs = -1;
      log.error('AUTH_TOKENS_FILE could not be read; scheduled occurrences fail closed', { error: String(e) });
    }
  };
  return {
    scopesOf(tenantId, principalId) {
      reload();
      return byPrincipal.get(`${tenantId}\u0000${principalId}`) ?? null;
    },
  };
}
