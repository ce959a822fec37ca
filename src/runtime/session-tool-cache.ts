import type { ToolSpec } from '../domain/tools/tool-spec';

/**
 * The tool definitions a session's runs advertise, pinned the first time a run of the session
 * builds a request (docs/mcp.md, "Discovery"). MCP servers may change their tool list at any time
 * (`notifications/tools/list_changed`, a restart); the registry follows them, but a session keeps
 * the list it started with so the request prefix stays byte-stable within a run and across its
 * turns. Bounded (least recently used entries are dropped) and per process.
 */
export class SessionToolCache {
  private readonly entries = new Map<string, readonly ToolSpec[]>();

  constructor(private readonly maxEntries = 1000) {}

  /** The pinned list for (session, key), computed by `compute` on first use. */
  get(sessionId: string, key: string, compute: () => readonly ToolSpec[]): readonly ToolSpec[] {
    const k = `${sessionId}\u0000${key}`;
    const hit = this.entries.get(k);
    if (hit) {
      this.entries.delete(k);
      this.entries.set(k, hit);
      return hit;
    }
    const specs = compute();
    this.entries.set(k, specs);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    return specs;
  }
}
