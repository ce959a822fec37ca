import * as fs from 'node:fs';
import { AuthenticationError, ConfigurationError } from '../../domain/errors';
import { LOCAL_PRINCIPAL, type Principal } from '../../domain/principal';
import type { Logger } from '../../ports/logger';
import type { ApiRequest } from '../request-context';
import { ADMIN_SCOPE, REVIEW_SCOPE } from './scopes';
import { loadTokenFile, sha256Hex, type TokenGrant } from './token-file';

export interface AuthOptions {
  readonly mode: 'dev' | 'token';
  readonly tokensFile: string | null;
  /** Scopes the builtin tools require (part of the `user` preset). */
  readonly toolScopes: readonly string[];
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

/** Headers a reverse proxy adds: their presence means the caller is not on this machine. */
const PROXY_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip'] as const;

/** The same answer for a malformed, unknown, expired or revoked token: nothing tells which. */
const NOT_VALID = 'the bearer token is not valid';

/**
 * Turns a request into the plan's Principal and nothing else (plan §16, §22; ADR 0032).
 * `dev`: loopback peers only, and no request that came through a proxy, as the fixed local
 * principal. `token`: `Authorization: Bearer <token>` looked up by SHA-256 in AUTH_TOKENS_FILE,
 * refused once expired or revoked. The file is re-read when it changed (checked on every request,
 * so a revocation takes effect on the next request of every API process) and on `reload()` (SIGHUP).
 */
export class Authenticator {
  private tokens = new Map<string, TokenGrant>();
  private fileSignature = '';

  constructor(
    private readonly opts: AuthOptions,
    private readonly log?: Logger,
    private readonly nowMs: () => number = Date.now,
  ) {
    if (opts.mode === 'token') {
      if (!opts.tokensFile) {
        throw new ConfigurationError(
          'AUTH_MODE=token needs AUTH_TOKENS_FILE: create one with `agent auth token create --tenant T --principal P`',
          {},
        );
      }
      this.tokens = loadTokenFile(opts.tokensFile, opts.toolScopes);
      this.fileSignature = signatureOf(opts.tokensFile);
    }
  }

  get mode(): 'dev' | 'token' {
    return this.opts.mode;
  }

  authenticate(req: ApiRequest): Principal {
    if (this.opts.mode === 'dev') return devPrincipal(req);
    const header = req.headers.authorization;
    if (header === undefined || header === '')
      throw new AuthenticationError('a bearer token is required (Authorization: Bearer <token>)', {});
    const m = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!m) throw new AuthenticationError(NOT_VALID, {});
    this.reloadIfChanged();
    const grant = this.tokens.get(sha256Hex(m[1]));
    if (!grant || (grant.expiresAtMs !== null && grant.expiresAtMs <= this.nowMs()))
      throw new AuthenticationError(NOT_VALID, {});
    return grant.principal;
  }

  /** Re-reads AUTH_TOKENS_FILE now (SIGHUP); on a bad file the previous tokens stay, with an error logged. */
  reload(reason = 'SIGHUP'): void {
    if (this.opts.mode !== 'token' || !this.opts.tokensFile) return;
    this.load(signatureOf(this.opts.tokensFile), reason);
  }

  private reloadIfChanged(): void {
    if (!this.opts.tokensFile) return;
    const signature = signatureOf(this.opts.tokensFile);
    if (signature !== this.fileSignature) this.load(signature, 'changed');
  }

  private load(signature: string, reason: string): void {
    try {
      this.tokens = loadTokenFile(this.opts.tokensFile!, this.opts.toolScopes);
      this.fileSignature = signature;
      this.log?.info('reloaded AUTH_TOKENS_FILE', { tokens: this.tokens.size, reason });
    } catch (e) {
      // Remember the bad version, so it is reported once, not on every request.
      this.fileSignature = signature;
      this.log?.error('AUTH_TOKENS_FILE could not be reloaded; keeping the previous tokens', {
        error: e instanceof Error ? e.message : String(e),
      });
    }
  }
}

/** The file's identity and version: a rewrite (temp file + rename) changes the inode, an edit the size or mtime. */
function signatureOf(file: string): string {
  try {
    const st = fs.statSync(file);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return 'missing';
  }
}

/** AUTH_MODE=dev: this machine's peers only, never through a proxy. */
function devPrincipal(req: ApiRequest): Principal {
  const peer = req.socket.remoteAddress ?? '';
  if (!LOOPBACK.test(peer)) throw new AuthenticationError('AUTH_MODE=dev accepts requests from this machine only', {});
  const proxied = PROXY_HEADERS.find((h) => req.headers[h] !== undefined);
  if (proxied) {
    throw new AuthenticationError(
      `AUTH_MODE=dev accepts requests from this machine only, and this one came through a proxy (${proxied}); serve proxied traffic with AUTH_MODE=token`,
      {},
    );
  }
  return LOCAL_ADMIN;
}

/** AUTH_MODE=dev: the local single user, who is also this deployment's operator (admin) and approver. */
const LOCAL_ADMIN: Principal = {
  ...LOCAL_PRINCIPAL,
  scopes: new Set([...LOCAL_PRINCIPAL.scopes, ADMIN_SCOPE, REVIEW_SCOPE]),
};
