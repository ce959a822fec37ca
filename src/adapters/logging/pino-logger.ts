import { trace, isSpanContextValid } from '@opentelemetry/api';
import pino, { type Logger as Pino } from 'pino';
import { findSecret } from '../../domain/events/secret-scan';
import type { Logger } from '../../ports/logger';

/**
 * The redaction processor: the plan §19 do-not-record list, enforced on every field, binding and
 * message rather than left to convention. A key is compared case-insensitively with `-`/`_`
 * removed, so `apiKey`, `api_key` and `X-API-Key` are the same key.
 *
 * - credentials: API keys, authentication tokens, passwords, secrets, cookies, authorization headers
 *   (and any key ending in `token`, `secret`, `password` or `apikey`);
 * - content: prompts, instructions, message content, tool arguments and results, artifact content;
 * - private reasoning (`reasoning`, `thinking`);
 * - any string that looks like a credential (the event log's secret scanner), a URL's userinfo,
 *   and e-mail addresses (personal data).
 */
export const REDACTED_KEYS = [
  'apiKey',
  'api_key',
  'x-api-key',
  'authorization',
  'Authorization',
  'proxy-authorization',
  'password',
  'passwd',
  'token',
  'accessToken',
  'refreshToken',
  'idToken',
  'secret',
  'clientSecret',
  'privateKey',
  'credentials',
  'cookie',
  'set-cookie',
  'prompt',
  'systemPrompt',
  'instructions',
  'messages',
  'content',
  'reasoning',
  'thinking',
  'arguments',
  'args',
  'result',
  'output',
  'artifactContent',
];

const REDACTED = '[REDACTED]';
const normalizeKey = (k: string) => k.toLowerCase().replace(/[-_]/g, '');
const REDACTED_SET = new Set(REDACTED_KEYS.map(normalizeKey));
const CREDENTIAL_SUFFIXES = ['token', 'secret', 'password', 'apikey'];

function isRedactedKey(key: string): boolean {
  const k = normalizeKey(key);
  return REDACTED_SET.has(k) || CREDENTIAL_SUFFIXES.some((s) => k.endsWith(s));
}

const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]*:[^\s/@]*@/gi;
const EMAIL = /\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b/g;

/** A string with credentials and personal data removed; a credential-looking string goes whole. */
function scrubString(s: string): string {
  if (findSecret(s)) return REDACTED;
  return s.replace(URL_USERINFO, `$1${REDACTED}@`).replace(EMAIL, '[REDACTED_EMAIL]');
}

/** Applies the processor to any value, however deep (beyond depth 8 the value is dropped). */
export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrubString(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth > 8) return '[TRUNCATED]';
  if (value instanceof Error) return { type: value.name, message: scrubString(value.message) };
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = isRedactedKey(k) ? REDACTED : redact(v, depth + 1);
  return out;
}

/**
 * The eight fields of plan §19 on every line: `timestamp`, `level`, `message` (pino's own keys,
 * renamed) and `request_id`, `trace_id`, `session_id`, `run_id`, `tool_invocation_id` — null when
 * not applicable. They are bound from the callers' camelCase fields (`runId` → `run_id`, …) and
 * `trace_id`/`span_id` from the active OpenTelemetry span.
 */
const CONTEXT_FIELDS: Readonly<Record<string, string>> = {
  requestId: 'request_id',
  traceId: 'trace_id',
  spanId: 'span_id',
  sessionId: 'session_id',
  runId: 'run_id',
  invocationId: 'tool_invocation_id',
  toolInvocationId: 'tool_invocation_id',
  tenantId: 'tenant_id',
};

function bindContext(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[CONTEXT_FIELDS[k] ?? k] = v;
  return out;
}

function activeSpanIds(): { trace_id: string; span_id: string } | null {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : null;
}

class PinoLogger implements Logger {
  constructor(
    private readonly p: Pino,
    private readonly bound: Record<string, unknown>,
  ) {}

  private entry(fields: Record<string, unknown>): object {
    const ids = activeSpanIds();
    return {
      request_id: null,
      trace_id: ids?.trace_id ?? null,
      span_id: ids?.span_id ?? null,
      session_id: null,
      run_id: null,
      tool_invocation_id: null,
      ...this.bound,
      ...(redact(bindContext(fields)) as Record<string, unknown>),
    };
  }

  info(msg: string, fields: Record<string, unknown> = {}) {
    if (this.p.isLevelEnabled('info')) this.p.info(this.entry(fields), scrubString(msg));
  }
  warn(msg: string, fields: Record<string, unknown> = {}) {
    if (this.p.isLevelEnabled('warn')) this.p.warn(this.entry(fields), scrubString(msg));
  }
  error(msg: string, fields: Record<string, unknown> = {}) {
    if (this.p.isLevelEnabled('error')) this.p.error(this.entry(fields), scrubString(msg));
  }
  debug(msg: string, fields: Record<string, unknown> = {}) {
    if (this.p.isLevelEnabled('debug')) this.p.debug(this.entry(fields), scrubString(msg));
  }
  child(bindings: Record<string, unknown>): Logger {
    return new PinoLogger(this.p, { ...this.bound, ...(redact(bindContext(bindings)) as Record<string, unknown>) });
  }
}

/** Structured JSON logs on stderr (stdout is reserved for CLI output). */
export function createLogger(opts: { level: string; service: string; destination?: pino.DestinationStream }): Logger {
  const p = pino(
    {
      level: opts.level,
      base: { service: opts.service, pid: process.pid },
      messageKey: 'message',
      timestamp: () => `,"timestamp":"${new Date().toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
    },
    opts.destination ?? pino.destination(2),
  );
  return new PinoLogger(p, {});
}

/** A logger that writes nothing (tests, quiet CLI paths). */
export const silentLogger: Logger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  debug: () => undefined,
  child: () => silentLogger,
};
