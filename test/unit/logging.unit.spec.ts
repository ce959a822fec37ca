import { Writable } from 'node:stream';
import { context, trace, TraceFlags } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { createLogger, redact, REDACTED_KEYS } from '../../src/adapters/logging/pino-logger';
import { startTracing, type TracingHandle } from '../../src/adapters/telemetry/otel-tracing';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      cb();
    },
  });
  return { lines, destination, entries: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** The eight fields of plan §19. */
const EIGHT = ['timestamp', 'level', 'message', 'request_id', 'trace_id', 'session_id', 'run_id', 'tool_invocation_id'];

describe('the structured logger', () => {
  it('writes JSON lines with the eight fields of plan §19, bound from camelCase fields', () => {
    const { destination, entries } = capture();
    const log = createLogger({ level: 'info', service: 'test', destination }).child({ runId: 'r-1', sessionId: 's-1' });
    log.info('model call finished', { latencyMs: 12, invocationId: 'i-1', requestId: 'q-1' });
    const [entry] = entries();
    for (const f of EIGHT) expect(entry).toHaveProperty(f);
    expect(entry).toMatchObject({
      service: 'test',
      level: 'info',
      message: 'model call finished',
      run_id: 'r-1',
      session_id: 's-1',
      tool_invocation_id: 'i-1',
      request_id: 'q-1',
      trace_id: null,
      latencyMs: 12,
    });
    expect(new Date(entry.timestamp as string).toISOString()).toBe(entry.timestamp);
  });

  it('fills the fields that do not apply with null, so every line has the same shape', () => {
    const { destination, entries } = capture();
    createLogger({ level: 'info', service: 'test', destination }).warn('worker started', { workerId: 'w' });
    const [entry] = entries();
    expect(entry).toMatchObject({
      level: 'warn',
      request_id: null,
      trace_id: null,
      session_id: null,
      run_id: null,
      tool_invocation_id: null,
    });
  });

  it('takes trace_id and span_id from the active OpenTelemetry span', () => {
    const { destination, entries } = capture();
    const log = createLogger({ level: 'info', service: 'test', destination });
    const sc = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: TraceFlags.SAMPLED };
    // Without an SDK, context.with does not propagate; set the span explicitly through a registered SDK.
    let tracing: TracingHandle | null = null;
    try {
      tracing = startTracing({ serviceName: 'log-test', exporter: new InMemorySpanExporter() });
      context.with(trace.setSpanContext(context.active(), sc), () => log.info('inside a span'));
    } finally {
      void tracing?.shutdown();
    }
    expect(entries()[0]).toMatchObject({ trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16) });
  });

  it('never writes keys, tokens, authorization headers, prompts or credential-looking strings', () => {
    const { lines, destination } = capture();
    const log = createLogger({ level: 'info', service: 'test', destination });
    log.info('request', {
      headers: { authorization: 'Bearer abc.def.ghi', 'X-API-Key': 'k-123-header' },
      apiKey: 'sk-live-123',
      prompt: 'the whole system prompt',
      note: 'user pasted sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 by mistake',
      nested: { deeper: { token: 'x-nested-token' } },
    });
    const text = lines.join('\n');
    for (const secret of [
      'abc.def.ghi',
      'k-123-header',
      'sk-live-123',
      'the whole system prompt',
      'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789',
      'x-nested-token',
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('[REDACTED]');
  });

  it('enforces the whole do-not-record list: content, tool arguments and results, reasoning, credentials, personal data', () => {
    const { lines, destination } = capture();
    const log = createLogger({ level: 'debug', service: 'test', destination });
    const planted = {
      content: [{ type: 'text', text: 'What is my salary? PLANTED-MESSAGE' }],
      messages: ['PLANTED-PROMPT-MESSAGE'],
      instructions: 'PLANTED-INSTRUCTIONS',
      arguments: { expression: 'PLANTED-ARGS' },
      result: { value: 'PLANTED-RESULT' },
      output: 'PLANTED-OUTPUT',
      reasoning: 'PLANTED-REASONING',
      thinking: 'PLANTED-THINKING',
      password: 'PLANTED-PASSWORD',
      client_secret: 'PLANTED-CLIENT-SECRET',
      githubToken: 'PLANTED-GH-TOKEN',
      Cookie: 'session=PLANTED-COOKIE',
      databaseUrl: 'postgres://agent:PLANTED-DB-PASSWORD@db.internal:5432/agent',
      who: 'mail me at jane.doe@example.com',
      jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlLXBsYW50ZWQ',
    };
    log.debug('everything that must not be recorded', planted);
    log.child(planted).info('and as bindings');
    log.error('Bearer abcdefghijklmnopqrstuvwxyz0123456789 in a message');
    const text = lines.join('\n');
    expect(text).not.toMatch(/PLANTED/);
    expect(text).not.toContain('jane.doe@example.com');
    expect(text).not.toContain('abcdefghijklmnopqrstuvwxyz0123456789');
    expect(text).toContain('db.internal:5432'); // the URL stays useful, only its userinfo goes
    expect(lines).toHaveLength(3);
  });

  it('keeps ordinary operational fields (counts, names, error messages) intact', () => {
    expect(
      redact({
        provider: 'demo',
        model: 'demo',
        latencyMs: 3,
        error: 'connection refused',
        usage: { outputTokens: 5 },
      }),
    ).toEqual({
      provider: 'demo',
      model: 'demo',
      latencyMs: 3,
      error: 'connection refused',
      usage: { outputTokens: 5 },
    });
    expect(redact(new Error('boom'))).toEqual({ type: 'Error', message: 'boom' });
    expect(REDACTED_KEYS).toEqual(expect.arrayContaining(['apiKey', 'authorization', 'prompt', 'reasoning', 'result']));
  });
});
