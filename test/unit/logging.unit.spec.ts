import { Writable } from 'node:stream';
import { createLogger } from '../../src/adapters/logging/pino-logger';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      cb();
    },
  });
  return { lines, destination };
}

describe('the structured logger', () => {
  it('writes JSON lines with the bound fields', () => {
    const { lines, destination } = capture();
    const log = createLogger({ level: 'info', service: 'test', destination }).child({ runId: 'r-1', traceId: 't-1' });
    log.info('model call finished', { latencyMs: 12 });
    const entry = JSON.parse(lines[0]) as Record<string, unknown>;
    expect(entry).toMatchObject({
      service: 'test',
      runId: 'r-1',
      traceId: 't-1',
      latencyMs: 12,
      msg: 'model call finished',
    });
  });

  it('never writes keys, tokens, authorization headers, prompts or credential-looking strings', () => {
    const { lines, destination } = capture();
    const log = createLogger({ level: 'info', service: 'test', destination });
    log.info('request', {
      headers: { authorization: 'Bearer abc.def.ghi' },
      apiKey: 'sk-live-123',
      prompt: 'the whole system prompt',
      note: 'user pasted sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 by mistake',
      nested: { deeper: { token: 'x' } },
    });
    const text = lines.join('\n');
    for (const secret of [
      'abc.def.ghi',
      'sk-live-123',
      'the whole system prompt',
      'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789',
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('[REDACTED]');
  });
});
