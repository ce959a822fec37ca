import type { Command } from 'commander';
import { loadDotEnv, loadSettings } from '../../config/settings';
import { EXIT } from '../exit-codes';

/**
 * `agent mcp list|status|restart`: the MCP servers of the running API process, through its operator
 * routes (`GET /v1/mcp/servers`, `POST /v1/mcp/servers/{id}/restart`, admin scope). The API is at
 * `AGENT_API_URL` (default `http://$HOST:$PORT`); in AUTH_MODE=token set `AGENT_API_TOKEN` to a
 * token holding the `admin` scope.
 */
interface ServerView {
  id: string;
  transport: string;
  state: string;
  protocol_version: string | null;
  tool_count: number;
  disabled_tools: { name: string; reason: string }[];
  restarts: number;
  last_error: string | null;
  pid: number | null;
  server_name: string | null;
  counters: { calls: number; failed_calls: number; protocol_errors: number };
}

/** What `POST /v1/mcp/servers/{id}/<action>` adds: the other processes' answers. */
interface ControlView extends ServerView {
  processes: {
    broadcast: boolean;
    acknowledged: { process: string; service: string; pid: number; state: string | null; error: string | null }[];
    unacknowledged: string[];
  };
}

/** One line per other process: what it did with the action, or that it did not answer. */
function otherProcesses(v: ControlView): string[] {
  const p = v.processes;
  if (!p.broadcast) return ['  other processes: not told (the broadcast failed; see the API log)'];
  return [
    ...p.acknowledged.map(
      (a) => `  ${a.service} pid ${a.pid} (${a.process.slice(0, 8)}): ${a.error ? `failed: ${a.error}` : a.state}`,
    ),
    ...p.unacknowledged.map((o) => `  process ${o.slice(0, 8)}: did not acknowledge in time`),
  ];
}

async function api(method: string, path: string): Promise<{ status: number; body: unknown }> {
  loadDotEnv();
  const s = loadSettings();
  const base = process.env.AGENT_API_URL || `http://${s.host}:${s.port}`;
  const token = process.env.AGENT_API_TOKEN;
  let r: Response;
  try {
    r = await fetch(`${base}${path}`, { method, headers: token ? { authorization: `Bearer ${token}` } : {} });
  } catch (e) {
    throw Object.assign(
      new Error(
        `the API at ${base} is not reachable (start it with \`agent start\`): ${String((e as Error).cause ?? e)}`,
      ),
      {
        exit: EXIT.unavailable,
      },
    );
  }
  const text = await r.text();
  return { status: r.status, body: text ? (JSON.parse(text) as unknown) : null };
}

function exitFor(status: number): number {
  if (status === 404) return EXIT.notFound;
  if (status === 400) return EXIT.usage;
  if (status === 409) return EXIT.conflict;
  return EXIT.unavailable;
}

function line(s: ServerView): string {
  const tools = `${s.tool_count} tools${s.disabled_tools.length ? ` (${s.disabled_tools.length} disabled)` : ''}`;
  const err = s.last_error ? `  last error: ${s.last_error}` : '';
  return `${s.id.padEnd(16)} ${s.transport.padEnd(5)} ${s.state.padEnd(8)} ${(s.protocol_version ?? '-').padEnd(10)} ${tools.padEnd(24)} restarts ${s.restarts}${err}`;
}

function detail(s: ServerView): string {
  return [
    `${s.id} (${s.transport})`,
    `  state            ${s.state}`,
    `  server           ${s.server_name ?? '-'}${s.pid ? ` (pid ${s.pid})` : ''}`,
    `  protocol version ${s.protocol_version ?? '-'}`,
    `  tools            ${s.tool_count}`,
    ...s.disabled_tools.map((d) => `    disabled ${d.name}: ${d.reason}`),
    `  restarts         ${s.restarts}`,
    `  calls            ${s.counters.calls} (${s.counters.failed_calls} failed, ${s.counters.protocol_errors} protocol errors)`,
    `  last error       ${s.last_error ?? '-'}`,
  ].join('\n');
}

async function run(fn: () => Promise<number>): Promise<never> {
  let code: number;
  try {
    code = await fn();
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n`);
    code = (e as { exit?: number }).exit ?? EXIT.unavailable;
  }
  process.exit(code);
}

function failed(r: { status: number; body: unknown }): number {
  const err = (r.body as { error?: { message?: string } } | null)?.error;
  process.stderr.write(`error: ${err?.message ?? `HTTP ${r.status}`}\n`);
  return exitFor(r.status);
}

export function registerMcpCommands(program: Command): void {
  const mcp = program.command('mcp').description('MCP servers of the running API (docs/mcp.md)');
  mcp
    .command('list')
    .description('every configured MCP server: transport, state, protocol version, tools, restarts, last error')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) =>
      run(async () => {
        const r = await api('GET', '/v1/mcp/servers');
        if (r.status !== 200) return failed(r);
        const items = (r.body as { items: ServerView[] }).items;
        if (opts.json) process.stdout.write(`${JSON.stringify(items)}\n`);
        else if (items.length === 0) process.stdout.write('no MCP servers are configured (config/mcp.yaml)\n');
        else for (const s of items) process.stdout.write(`${line(s)}\n`);
        return EXIT.ok;
      }),
    );
  mcp
    .command('status <server-id>')
    .description('one server in detail, with its disabled tools and call counters')
    .option('--json', 'print JSON')
    .action((id: string, opts: { json?: boolean }) =>
      run(async () => {
        const r = await api('GET', '/v1/mcp/servers');
        if (r.status !== 200) return failed(r);
        const s = (r.body as { items: ServerView[] }).items.find((x) => x.id === id);
        if (!s) {
          process.stderr.write(`error: no MCP server "${id}" is configured\n`);
          return EXIT.notFound;
        }
        process.stdout.write(opts.json ? `${JSON.stringify(s)}\n` : `${detail(s)}\n`);
        return s.state === 'failed' ? EXIT.failed : EXIT.ok;
      }),
    );
  for (const action of ['restart', 'start', 'stop'] as const)
    mcp
      .command(`${action} <server-id>`)
      .description(
        action === 'restart'
          ? 'restart a server now (resets its restart window, e.g. after it was marked failed)'
          : `${action} a server`,
      )
      .action((id: string) =>
        run(async () => {
          const r = await api('POST', `/v1/mcp/servers/${encodeURIComponent(id)}/${action}`);
          if (r.status !== 200) return failed(r);
          const s = r.body as ControlView;
          process.stdout.write(`${[line(s), ...otherProcesses(s)].join('\n')}\n`);
          const othersOk =
            s.processes.broadcast &&
            s.processes.unacknowledged.length === 0 &&
            s.processes.acknowledged.every((a) => a.error === null && (action === 'stop' || a.state === 'ready'));
          return (action !== 'stop' && s.state !== 'ready') || !othersOk ? EXIT.failed : EXIT.ok;
        }),
      );
}
