import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { McpHub, parseMcpConfig } from '../src/adapters/mcp';
import type { Logger } from '../src/ports/logger';
import { printTable } from './support/print-table';

/**
 * `npm run bench -- mcp-isolation` (issue 34 item 5, ADR 0048): what isolating an MCP server costs.
 * The probe server (test/fixtures/mcp/probe-server.mjs, the SDK's McpServer) per profile: start to
 * tools listed (a fresh start each round, median of 5), and one `echo` call (median of 50 on the
 * running server). Profiles whose launcher is missing are skipped.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const PROBE = path.join(ROOT, 'test/fixtures/mcp/probe-server.mjs');
const PATHS = [path.dirname(PROBE), path.join(ROOT, 'node_modules')];

const quiet: Logger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  debug: () => undefined,
  child: () => quiet,
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function hubFor(profile: string, stateDir: string): McpHub {
  const entry = {
    id: 'probe',
    transport: { type: 'stdio', command: process.execPath, args: [PROBE] },
    classification: { side_effect: 'read', risk: 'low', idempotency: 'read_only' },
    ...(profile === 'none' ? {} : { isolation: profile, paths: PATHS }),
  };
  const config = parseMcpConfig({ version: 1, servers: [entry] }, 'bench/mcp.yaml', {});
  return new McpHub(config, quiet, {}, undefined, { hidden: [], gvisorStateDir: stateDir });
}

async function measure(profile: string, stateDir: string): Promise<string[]> {
  const starts: number[] = [];
  for (let i = 0; i < 5; i++) {
    const hub = hubFor(profile, stateDir);
    const t = performance.now();
    const d = await hub.discover('probe');
    if (d.error) throw new Error(`${profile}: ${d.error}`);
    starts.push(performance.now() - t);
    await hub.close();
  }
  const hub = hubFor(profile, stateDir);
  const echo = (await hub.discover('probe')).tools.find((x) => x.spec.name === 'mcp.probe.echo')!;
  const calls: number[] = [];
  for (let i = 0; i < 50; i++) {
    const t = performance.now();
    const r = await echo.execute({ message: 'x' }, { signal: new AbortController().signal } as never);
    if (!r.ok) throw new Error(`${profile}: ${r.message}`);
    calls.push(performance.now() - t);
  }
  await hub.close();
  return [profile, median(starts).toFixed(0), median(calls).toFixed(2)];
}

export async function runMcpIsolationBench(): Promise<void> {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-mcp-bench-'));
  const profiles = [
    'none',
    ...(fs.existsSync('/usr/bin/bwrap') ? ['namespace'] : []),
    ...(fs.existsSync('/usr/bin/runsc') ? ['gvisor'] : []),
  ];
  const rows: string[][] = [];
  try {
    for (const p of profiles) rows.push(await measure(p, stateDir));
  } finally {
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
  printTable(
    [
      { header: 'isolation' },
      { header: 'start → tools listed, ms (median of 5)', right: true },
      { header: 'echo call, ms (median of 50)', right: true },
    ],
    rows,
  );
}
