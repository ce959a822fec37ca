import * as path from 'node:path';
import { DEFAULT_RESTART_POLICY, parseMcpConfig } from '../../../src/adapters/mcp';
import { McpServerSupervisor } from '../../../src/adapters/mcp/supervisor';
import { ConfigurationError } from '../../../src/domain/errors';
import { capturingLogger, EVERYTHING, until } from './mcp-support';

const CLEAN_EXIT = path.resolve(__dirname, '../../fixtures/mcp/clean-exit.mjs');
const CRASHING = { type: 'stdio', command: process.execPath, args: ['-e', 'process.exit(3)'] };

const parse = (servers: unknown[]) => parseMcpConfig({ version: 1, servers }, '/cfg/mcp.yaml', {});
const server = (restart?: Record<string, unknown>, transport: unknown = CRASHING) => ({
  id: 'crashy',
  transport,
  startup_timeout_seconds: 5,
  ...(restart ? { restart } : {}),
});

/**
 * A window clock that moves `stepMs` on every reading: the supervisor reads it once per failure, so
 * the n-th crash happens at (n-1)·stepMs of fake time while the test takes milliseconds.
 */
function steppingClock(stepMs: number): () => number {
  let t = -stepMs;
  return () => (t += stepMs);
}

const scheduled = (log: ReturnType<typeof capturingLogger>) =>
  log.records.filter((r) => r.msg === 'mcp server restart scheduled').length;

describe('MCP restart policy: config', () => {
  it('an entry without `restart` gets the one default policy; fields override it one by one', () => {
    const [d] = parse([server()]).servers;
    expect(d.restart).toEqual(DEFAULT_RESTART_POLICY);
    expect(DEFAULT_RESTART_POLICY).toEqual({
      strategy: 'on_failure',
      maxRestarts: 5,
      windowMs: 300_000,
      baseDelayMs: 1000,
      maxDelayMs: 30_000,
    });
    const [o] = parse([server({ strategy: 'always', max_restarts: 2, restart_window_seconds: 60 })]).servers;
    expect(o.restart).toEqual({ ...DEFAULT_RESTART_POLICY, strategy: 'always', maxRestarts: 2, windowMs: 60_000 });
  });

  it.each([
    [{ strategy: 'sometimes' }, /server crashy: field restart.strategy: must be one of on_failure, always, never/],
    [{ max_restarts: -1 }, /server crashy: field restart.max_restarts: must be >= 0/],
    [{ backoff_base_ms: -5 }, /server crashy: field restart.backoff_base_ms: must be >= 0/],
    [{ restart_window_seconds: 0 }, /server crashy: field restart.restart_window_seconds: must be > 0/],
    [{ max_restart: 3 }, /server crashy: field restart.max_restart: unknown field 'max_restart'/],
    [{ backoff_base_ms: 5000, backoff_max_ms: 1000 }, /server crashy: field restart.backoff_max_ms: must not be below/],
  ])('refuses restart %j naming the server and field', (restart, message) => {
    expect(() => parse([server(restart)])).toThrow(ConfigurationError);
    expect(() => parse([server(restart)])).toThrow(message);
  });
});

describe('MCP restart policy: the rolling window (fake time)', () => {
  const fast = { backoff_base_ms: 1, backoff_max_ms: 4 };

  it('a server whose crashes come 50 s apart (six in 250 s: five restarts inside 300 s) gives up: state failed', async () => {
    const log = capturingLogger();
    const [cfg] = parse([server(fast)]).servers;
    const sup = new McpServerSupervisor(cfg, log, {}, steppingClock(50_000));
    try {
      await expect(sup.ready()).rejects.toThrow(/MCP server crashy is unavailable/);
      await until('failed', () => sup.status().state === 'failed', 15_000);
      expect(sup.status().restarts).toBe(5);
      expect(scheduled(log)).toBe(5);
      expect(sup.status().lastError).toMatch(/gave up after 5 restarts in 300 s/);
      await expect(sup.ready()).rejects.toThrow(/gave up after 5 restarts/);
    } finally {
      await sup.stop();
    }
  });

  it('the same server with crashes 100 s apart (spread over 400 s and beyond) keeps being restarted: old crashes leave the window', async () => {
    const log = capturingLogger();
    const [cfg] = parse([server(fast)]).servers;
    const sup = new McpServerSupervisor(cfg, log, {}, steppingClock(100_000));
    try {
      await expect(sup.ready()).rejects.toThrow(/unavailable/);
      // Crash 5 is at 400 s, crash 8 at 700 s: never more than 3 inside any 300 s.
      await until('eight crashes', () => scheduled(log) >= 8, 20_000);
      expect(sup.status().state).not.toBe('failed');
      expect(log.records.filter((r) => r.msg === 'mcp server marked failed')).toEqual([]);
      expect(sup.status().restarts).toBeGreaterThanOrEqual(7);
    } finally {
      await sup.stop();
    }
  });

  it('max_restarts and restart_window_seconds come from the entry: 2 restarts in 60 s, crashes 10 s apart', async () => {
    const log = capturingLogger();
    const [cfg] = parse([server({ ...fast, max_restarts: 2, restart_window_seconds: 60 })]).servers;
    const sup = new McpServerSupervisor(cfg, log, {}, steppingClock(10_000));
    try {
      await expect(sup.ready()).rejects.toThrow(/unavailable/);
      await until('failed', () => sup.status().state === 'failed', 15_000);
      expect(sup.status().restarts).toBe(2);
      expect(sup.status().lastError).toMatch(/gave up after 2 restarts in 60 s/);
    } finally {
      await sup.stop();
    }
  });
});

describe('MCP restart policy: strategies', () => {
  it('never: the first crash marks the server failed, no restart is scheduled', async () => {
    const log = capturingLogger();
    const [cfg] = parse([server({ strategy: 'never', backoff_base_ms: 1, backoff_max_ms: 4 })]).servers;
    const sup = new McpServerSupervisor(cfg, log);
    try {
      await expect(sup.ready()).rejects.toThrow(/unavailable/);
      expect(sup.status().state).toBe('failed');
      await new Promise((r) => setTimeout(r, 300));
      expect(sup.status()).toMatchObject({ state: 'failed', restarts: 0 });
      expect(scheduled(log)).toBe(0);
      expect(sup.status().lastError).toMatch(/restart strategy never does not restart it/);
    } finally {
      await sup.stop();
    }
  });

  const cleanExiting = (strategy: string) => {
    const transport = { type: 'stdio', command: process.execPath, args: [CLEAN_EXIT, EVERYTHING] };
    const [cfg] = parse([
      { id: 'quitter', transport, restart: { strategy, backoff_base_ms: 10, backoff_max_ms: 10 } },
    ]).servers;
    return new McpServerSupervisor(cfg, capturingLogger());
  };
  const signal = new AbortController().signal;

  it('always: a server that exits cleanly (code 0) is restarted, and the next call runs on the new process', async () => {
    const sup = cleanExiting('always');
    try {
      expect((await sup.callTool('echo', { message: 'one' }, signal, 10_000)).isError).toBe(false);
      const first = sup.pid!;
      await expect(sup.callTool('echo', { message: 'EXIT_CLEAN' }, signal, 10_000)).rejects.toThrow();
      const next = await until('restarted', () =>
        sup.status().state === 'ready' && sup.pid !== first ? sup.pid : null,
      );
      expect(next).not.toBe(first);
      expect(sup.status().restarts).toBe(1);
      expect((await sup.callTool('echo', { message: 'two' }, signal, 10_000)).isError).toBe(false);
    } finally {
      await sup.stop();
    }
  });

  it('on_failure (the default): a clean exit is not a failure: the server stays stopped, with the reason', async () => {
    const sup = cleanExiting('on_failure');
    try {
      expect((await sup.callTool('echo', { message: 'one' }, signal, 10_000)).isError).toBe(false);
      await expect(sup.callTool('echo', { message: 'EXIT_CLEAN' }, signal, 10_000)).rejects.toThrow();
      await until('stopped', () => sup.status().state === 'stopped');
      await new Promise((r) => setTimeout(r, 300));
      expect(sup.status()).toMatchObject({ state: 'stopped', restarts: 0, pid: null });
      expect(sup.status().lastError).toMatch(/exited \(code 0\); restart strategy on_failure does not restart it/);
      await expect(sup.ready()).rejects.toThrow(/restart strategy on_failure/);
    } finally {
      await sup.stop();
    }
  });
});
