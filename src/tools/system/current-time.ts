import type { ToolResult, ToolSpec } from '../../domain/tools/tool-spec';
import type { Tool, ToolExecutionContext } from '../../ports/tool';
import { resolveTimeZone } from './time-zone';
import { zonedTime } from './zoned-time';

const DEFAULT_TIME_ZONE = 'UTC';
/** The ECMAScript Date range; beyond it toISOString throws. */
const MAX_DATE_MS = 8.64e15;

const CURRENT_TIME_SPEC: ToolSpec = {
  name: 'system.current_time',
  version: '1.0.0',
  description:
    'Returns the current date and time in an IANA time zone such as "Europe/Paris" or "America/New_York" ' +
    '(default "UTC"): the UTC instant, local date (YYYY-MM-DD), local time (HH:MM:SS), UTC offset and weekday. ' +
    'Offsets like "+05:00" and abbreviations like "EST" are not accepted.',
  inputSchema: {
    type: 'object',
    properties: {
      timezone: { type: 'string', minLength: 1, maxLength: 64 },
    },
    additionalProperties: false,
  },
  outputSchema: {
    type: 'object',
    properties: {
      timezone: { type: 'string' },
      iso_utc: { type: 'string' },
      local_date: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' },
      local_time: { type: 'string', pattern: '^\\d{2}:\\d{2}:\\d{2}$' },
      utc_offset: { type: 'string', pattern: '^[+-]\\d{2}:\\d{2}(:\\d{2})?$' },
      weekday: { type: 'string' },
    },
    required: ['timezone', 'iso_utc', 'local_date', 'local_time', 'utc_offset', 'weekday'],
    additionalProperties: false,
  },
  sideEffect: 'none',
  risk: 'low',
  idempotency: 'read_only',
  requiredScopes: [],
  timeoutSeconds: 5,
  maximumOutputBytes: 2048,
  allowParallel: true,
};

/**
 * The `system.current_time` tool. Time comes only from `ctx.clock.nowMs()`, so a fake clock makes
 * it fully deterministic (and a replayed run sees the time the original run recorded).
 */
export function createCurrentTimeTool(): Tool {
  return {
    spec: CURRENT_TIME_SPEC,
    execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolResult> {
      return Promise.resolve(currentTime(args, ctx));
    },
  };
}

function currentTime(args: Record<string, unknown>, ctx: ToolExecutionContext): ToolResult {
  const requested = args['timezone'] ?? DEFAULT_TIME_ZONE;
  const timezone = typeof requested === 'string' ? resolveTimeZone(requested) : undefined;
  if (timezone === undefined) {
    return {
      ok: false,
      errorCode: 'invalid_timezone',
      message: `unknown or unsupported time zone ${describe(requested)}; use an IANA name such as "Europe/Paris" or "UTC"`,
      retryable: false,
    };
  }
  const nowMs = ctx.clock.nowMs();
  if (!Number.isFinite(nowMs) || Math.abs(nowMs) > MAX_DATE_MS) {
    return { ok: false, errorCode: 'clock_invalid', message: `clock returned ${nowMs}`, retryable: false };
  }
  const local = zonedTime(nowMs, timezone);
  return {
    ok: true,
    output: {
      timezone,
      // Formatting a given instant; this reads no ambient time.
      iso_utc: new Date(nowMs).toISOString(),
      local_date: local.localDate,
      local_time: local.localTime,
      utc_offset: local.utcOffset,
      weekday: local.weekday,
    },
  };
}

/** Echoes the bad value without letting an oversized argument bloat the message. */
function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 64)) : `of type ${typeof value}`;
}
