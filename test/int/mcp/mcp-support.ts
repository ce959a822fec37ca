import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Logger } from '../../../src/ports/logger';

export const EVERYTHING = path.resolve(
  __dirname,
  '../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js',
);
const CONFIG = path.resolve(__dirname, '../../../config');

/** A copy of config/ with `mcp.yaml` and extra agent files added; removed by the returned cleanup. */
export function makeConfigDir(mcpYaml: string, agents: Record<string, string> = {}): { dir: string; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-mcp-config-'));
  fs.cpSync(CONFIG, dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'mcp.yaml'), mcpYaml);
  for (const [file, text] of Object.entries(agents)) fs.writeFileSync(path.join(dir, 'agents', file), text);
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

export const MCP_AGENT = `
id: mcp_demo
version: 1
name: MCP demo
instructions: Use the MCP tools when asked.
model_policy: demo
enabled_tools: [math.calculate]
mcp_servers: [everything]
policy_profile: default
limits: { max_steps: 10, max_model_calls: 20, max_tool_calls: 20, deadline_seconds: 120 }
`;

export interface CapturedLog {
  readonly level: string;
  readonly msg: string;
  readonly fields: Record<string, unknown>;
}

/** A Logger that keeps every record (the tests assert on logged reasons). */
export function capturingLogger(sink: CapturedLog[] = []): Logger & { records: CapturedLog[] } {
  const make = (bindings: Record<string, unknown>): Logger & { records: CapturedLog[] } => {
    const at =
      (level: string) =>
      (msg: string, fields: Record<string, unknown> = {}) =>
        sink.push({ level, msg, fields: { ...bindings, ...fields } });
    return {
      records: sink,
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      debug: at('debug'),
      child: (b) => make({ ...bindings, ...b }),
    };
  };
  return make({});
}

export async function until<T>(
  what: string,
  probe: () => Promise<T | null> | T | null,
  timeoutMs = 15_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
