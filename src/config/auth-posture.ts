import { ConfigurationError } from '../domain/errors';
import type { Settings } from './settings';

const LOOPBACK_HOST = /^(localhost|127(?:\.\d{1,3}){3}|::1|\[::1\]|::ffff:127(?:\.\d{1,3}){3})$/i;

/** Whether HOST binds to this machine's loopback interface only (`0.0.0.0` and `::` are every interface). */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOST.test(host.trim());
}

/**
 * The production auth posture (ADR 0032), checked by `agent start` and `agent api` before anything
 * starts: AUTH_MODE=dev trusts every loopback peer as this deployment's administrator, so it may
 * only listen on a loopback address. Anything reachable from elsewhere needs AUTH_MODE=token.
 * @throws ConfigurationError naming AUTH_MODE=token
 */
export function assertAuthPosture(settings: Pick<Settings, 'authMode' | 'host'>): void {
  if (settings.authMode !== 'dev' || isLoopbackHost(settings.host)) return;
  throw new ConfigurationError(
    `HOST=${settings.host} is not a loopback address, and AUTH_MODE=dev (the default) treats every local caller as the administrator: set AUTH_MODE=token with AUTH_TOKENS_FILE (create tokens with \`agent auth token create\`) to listen on ${settings.host}, or keep HOST=127.0.0.1`,
    { name: 'AUTH_MODE', host: settings.host },
  );
}
