import { parseMcpConfig } from '../../../src/adapters/mcp';
import { McpServerSupervisor } from '../../../src/adapters/mcp/supervisor';
import { ConfigurationError } from '../../../src/domain/errors';
import type { McpMetrics } from '../../../src/ports/metrics';
import { capturingLogger, EVERYTHING, until } from './mcp-support';

const server = (over: Record<string, unknown> = {}) => ({
  id: 'everything',
  transport: { type: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'] },
  ...over,
});
const parse = (servers: unknown[]) => parseMcpConfig({ version: 1, servers }, '/cfg/mcp.yaml', {});

describe('MCP health checks: config', () => {
  it('defaults to a 30 s interval and a 5 s timeout; 0 disables', () => {
    const [d] = parse([server()]).servers;
    expect(d).toMatchObject({ healthIntervalMs: 30_000, healthTimeoutMs: 5_000 });
    const [off] = parse([server({ health_interval_seconds: 0 })]).servers;
    expect(off.healthIntervalMs).toBe(0);
  });

  it.each([
    [{ health_interval_seconds: -1 }, /server everything: field health_interval_seconds/],
    [{ health_timeout_seconds: 0 }, /server everything: field health_timeout_seconds/],
    [{ health_interval_seconds: 'often' }, /server everything: field health_interval_seconds/],
  ])('refuses %j naming server and field', (over, message) => {
    expect(() => parse([server(over)])).toThrow(ConfigurationError);
    expect(() => parse([server(over)])).toThrow(message);
  });
});

describe('MCP health checks: supervisor', () => {
  it('a SIGSTOPped child (alive, unresponsive) fails its ping, is restarted through backoff, and the next call succeeds', async () => {
    const log = capturingLogger();
    const recorded = { restarts: 0, up: [] as boolean[] };
    const metrics: McpMetrics = {
      mcpCall: () => undefined,
      mcpServerRestarted: () => void recorded.restarts++,
      mcpServerUp: (_id, up) => void recorded.up.push(up),
    };
    const [cfg] = parse([server({ health_interval_seconds: 1, health_timeout_seconds: 2 })]).servers;
    const sup = new McpServerSupervisor(
      cfg,
      log,
      { baseDelayMs: 200, maxDelayMs: 1000, maxRestarts: 5, windowMs: 300_000 },
      Date.now,
      metrics,
    );
    let stopped: number | null = null;
    try {
      const first = await sup.callTool('echo', { message: 'before' }, new AbortController().signal, 10_000);
      expect(first.isError).toBe(false);
      stopped = sup.pid!;
      expect(stopped).toBeGreaterThan(0);
      // A healthy server keeps answering pings: no failure over a few intervals.
      await new Promise((r) => setTimeout(r, 2500));
      expect(log.records.filter((r) => r.msg === 'mcp health check failed')).toEqual([]);
      expect(sup.status()).toMatchObject({ state: 'ready', restarts: 0 });

      process.kill(stopped, 'SIGSTOP');
      const failed = await until(
        'health check failure',
        () => log.records.find((r) => r.msg === 'mcp health check failed') ?? null,
      );
      expect(failed.level).toBe('warn');
      expect(failed.fields.server).toBe('everything');
      expect(String(failed.fields.error)).toMatch(/health check failed: .*timed out/i);
      expect(recorded.up).toContain(false);
      expect(log.records).toContainEqual(expect.objectContaining({ msg: 'mcp server restart scheduled' }));

      const newPid = await until(
        'restarted child',
        () => (sup.status().state === 'ready' && sup.pid !== null && sup.pid !== stopped ? sup.pid : null),
        20_000,
      );
      expect(newPid).not.toBe(stopped);
      expect(sup.status().restarts).toBe(1);
      expect(recorded.restarts).toBe(1);
      expect(recorded.up[recorded.up.length - 1]).toBe(true);

      const after = await sup.callTool('echo', { message: 'after' }, new AbortController().signal, 10_000);
      expect(after.isError).toBe(false);
      expect(JSON.stringify(after.content)).toContain('after');
    } finally {
      await sup.stop();
      if (stopped !== null) {
        try {
          process.kill(stopped, 'SIGCONT');
          process.kill(stopped, 'SIGKILL');
        } catch {
          // already gone (the supervisor's close escalates to SIGKILL)
        }
        const old = stopped;
        await until('old child gone', () => {
          try {
            process.kill(old, 0);
            return null;
          } catch {
            return true;
          }
        });
      }
    }
  }, 60_000);

  it('with health_interval_seconds: 0 no pings are sent and a stopped child is not noticed between calls', async () => {
    const log = capturingLogger();
    const [cfg] = parse([server({ health_interval_seconds: 0 })]).servers;
    const sup = new McpServerSupervisor(cfg, log);
    let stopped: number | null = null;
    try {
      await sup.callTool('echo', { message: 'x' }, new AbortController().signal, 10_000);
      stopped = sup.pid!;
      process.kill(stopped, 'SIGSTOP');
      await new Promise((r) => setTimeout(r, 1500));
      expect(sup.status()).toMatchObject({ state: 'ready', pid: stopped, restarts: 0 });
      expect(log.records.filter((r) => r.msg === 'mcp health check failed')).toEqual([]);
    } finally {
      if (stopped !== null) {
        try {
          process.kill(stopped, 'SIGCONT');
        } catch {
          // gone
        }
      }
      await sup.stop();
    }
  }, 30_000);
});
