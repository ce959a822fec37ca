import type { McpServerConfig } from './mcp-config';

/** Values of the credentials this server was given (its env allowlist and HTTP auth), read now. */
function credentialsOf(server: McpServerConfig): { name: string; value: string }[] {
  const names = [...server.envAllowlist, ...(server.auth ? [server.auth.env] : [])];
  return names
    .map((name) => ({ name, value: process.env[name] ?? '' }))
    .filter((c) => c.value.length >= 6) // short values (e.g. "1", "true") are not credentials
    .sort((a, b) => b.value.length - a.value.length);
}

/** Replaces every occurrence of a credential value in any string of `value` with `[redacted:<NAME>]`. */
export function redactCredentials<T>(value: T, server: McpServerConfig): T {
  const creds = credentialsOf(server);
  if (creds.length === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      let out = v;
      for (const c of creds) out = out.split(c.value).join(`[redacted:${c.name}]`);
      return out;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v instanceof Error) return v;
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}
