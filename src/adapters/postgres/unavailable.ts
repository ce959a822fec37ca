import { DatabaseUnavailable } from '../../domain/errors';

/** Socket errors of a server that is gone, restarting or not reachable. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * SQLSTATEs of a failover: class 08 (connection exception; PgBouncer reports a lost or unreachable
 * server as 08P01), 57P01–57P03 (administrator or crash shutdown, the server still starting) and
 * 25006 (a read-only transaction: the primary was demoted, or a router sent us to a replica).
 */
function unavailableState(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '25006';
}

/** node-postgres' own messages for a connection that ended or never opened. */
const DRIVER_MESSAGES = [
  'Connection terminated',
  'connection timeout',
  'timeout exceeded when trying to connect',
  'is not queryable',
  'Client was closed',
  'Query read timeout', // the pool's client-side query_timeout: the server did not answer in time
];

/** Whether `e` says the database is unavailable (rather than that the statement was wrong). */
export function isDatabaseUnavailable(e: unknown): boolean {
  if (e instanceof DatabaseUnavailable) return true;
  if (!(e instanceof Error)) return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && unavailableState(code))))
    return true;
  return DRIVER_MESSAGES.some((m) => e.message.includes(m));
}

/** `e` as `DatabaseUnavailable` when it is one (the original as its cause), else `e` unchanged. */
export function asDatabaseUnavailable(e: unknown): unknown {
  if (e instanceof DatabaseUnavailable || !isDatabaseUnavailable(e)) return e;
  const message = (e as Error).message;
  return new DatabaseUnavailable(`database unavailable: ${message}`, {}, { cause: e });
}
