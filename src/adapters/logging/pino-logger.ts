import pino, { type Logger as Pino } from 'pino';
import { findSecret } from '../../domain/events/secret-scan';
import type { Logger } from '../../ports/logger';

/** Keys whose values are never written (plan §19 do-not-record list). */
export const REDACTED_KEYS = [
  'apiKey',
  'api_key',
  'authorization',
  'Authorization',
  'password',
  'token',
  'accessToken',
  'refreshToken',
  'secret',
  'cookie',
  'prompt',
  'reasoning',
  'arguments',
  'result',
];

/** Replaces any string that looks like a credential, wherever it sits. */
function scrub(value: unknown, depth = 0): unknown {
  if (depth > 6) return value;
  if (typeof value === 'string') return findSecret(value) ? '[REDACTED]' : value;
  if (Array.isArray(value)) return value.map((v) => scrub(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = REDACTED_KEYS.includes(k) ? '[REDACTED]' : scrub(v, depth + 1);
    return out;
  }
  return value;
}

class PinoLogger implements Logger {
  constructor(private readonly p: Pino) {}
  info(msg: string, fields: Record<string, unknown> = {}) {
    this.p.info(scrub(fields) as object, msg);
  }
  warn(msg: string, fields: Record<string, unknown> = {}) {
    this.p.warn(scrub(fields) as object, msg);
  }
  error(msg: string, fields: Record<string, unknown> = {}) {
    this.p.error(scrub(fields) as object, msg);
  }
  debug(msg: string, fields: Record<string, unknown> = {}) {
    this.p.debug(scrub(fields) as object, msg);
  }
  child(bindings: Record<string, unknown>): Logger {
    return new PinoLogger(this.p.child(scrub(bindings) as object));
  }
}

/** Structured JSON logs on stderr (stdout is reserved for CLI output). */
export function createLogger(opts: { level: string; service: string; destination?: pino.DestinationStream }): Logger {
  const p = pino(
    {
      level: opts.level,
      base: { service: opts.service, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_KEYS.map((k) => `*.${k}`), censor: '[REDACTED]' },
    },
    opts.destination ?? pino.destination(2),
  );
  return new PinoLogger(p);
}

/** A logger that writes nothing (tests, quiet CLI paths). */
export const silentLogger: Logger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  debug: () => undefined,
  child: () => silentLogger,
};
