import * as fs from 'node:fs';
import { AuthenticationError, ConfigurationError } from '../../domain/errors';
import { LOCAL_PRINCIPAL, type Principal } from '../../domain/principal';
import type { Logger } from '../../ports/logger';
import type { ApiRequest } from '../request-context';
import { ADMIN_SCOPE } from './scopes';
import { loadTokenFile, sha256Hex } from './token-file';

export interface AuthOptions {
  readonly mode: 'dev' | 'token';
  readonly tokensFile: string | null;
  /** Scopes the builtin tools require (part of the `user` preset). */
  readonly toolScopes: readonly string[];
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

/**
 * Turns a request into the plan's Principal and nothing else (plan §16, §22).
 * `dev`: loopback peers only, as the fixed local principal. `token`: `Authorization: Bearer <token>`
 * looked up by SHA-256 in AUTH_TOKENS_FILE (re-read when the file changes, at most once a second).
 */
export class Authenticator {
  private tokens = new Map<string, Principal>();
  private fileMtimeMs = 0;
  private checkedAt = 0;

  constructor(
    private readonly opts: AuthOptions,
    private readonly log?: Logger,
  ) {
    if (opts.mode === 'token') {
      if (!opts.tokensFile) {
        throw new ConfigurationError(
          'AUTH_MODE=token needs AUTH_TOKENS_FILE: create one with `agent auth token create --tenant T --principal P`',
          {},
        );
      }
      this.tokens = loadTokenFile(opts.tokensFile, opts.toolScopes);
      this.fileMtimeMs = fs.statSync(opts.tokensFile).mtimeMs;
    }
  }

  get mode(): 'dev' | 'token' {
    return this.opts.mode;
  }

  authenticate(req: ApiRequest): Principal {
    if (this.opts.mode === 'dev') {
      const peer = req.socket.remoteAddress ?? '';
      if (!LOOPBACK.test(peer))
        throw new AuthenticationError('AUTH_MODE=dev accepts requests from this machine only', {});
      return LOCAL_ADMIN;
    }
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!m) throw new AuthenticationError('a bearer token is required (Authorization: Bearer <token>)', {});
    this.reloadIfChanged();
    const principal = this.tokens.get(sha256Hex(m[1]));
    if (!principal) throw new AuthenticationError('the bearer token is not valid', {});
    return principal;
  }

  private reloadIfChanged(): void {
    const now = Date.now();
    if (now - this.checkedAt < 1000 || !this.opts.tokensFile) return;
    this.checkedAt = now;
    try {
      const mtime = fs.statSync(this.opts.tokensFile).mtimeMs;
      if (mtime === this.fileMtimeMs) return;
      this.tokens = loadTokenFile(this.opts.tokensFile, this.opts.toolScopes);
      this.fileMtimeMs = mtime;
      this.log?.info('reloaded AUTH_TOKENS_FILE', { tokens: this.tokens.size });
    } catch (e) {
      this.log?.error('AUTH_TOKENS_FILE could not be reloaded; keeping the previous tokens', {
        error: e instanceof Error ? e.message : String(e),
      });
    }
  }
}

/** AUTH_MODE=dev: the local single user, who is also this deployment's operator (admin scope). */
const LOCAL_ADMIN: Principal = { ...LOCAL_PRINCIPAL, scopes: new Set([...LOCAL_PRINCIPAL.scopes, ADMIN_SCOPE]) };
