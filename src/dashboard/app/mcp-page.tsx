import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api';
import { reportAuth } from './nav';
import { ErrorText } from './sessions-page';

interface McpServer {
  id: string;
  transport: string;
  state: string;
  protocol_version: string | null;
  tool_count: number;
  disabled_tools: { name: string; reason: string }[];
  restarts: number;
  last_error: string | null;
  counters: { calls: number; failed_calls: number; protocol_errors: number };
}

const STATE_CLASS: Record<string, string> = {
  ready: 's-completed',
  failed: 's-failed',
  stopped: 's-cancelled',
  backoff: 's-waiting_for_approval',
  starting: 's-running',
};

/** The other processes' answers to an operator action (POST /v1/mcp/servers/{id}/restart). */
interface ControlProcesses {
  broadcast: boolean;
  acknowledged: { process: string; service: string; pid: number; state: string | null; error: string | null }[];
  unacknowledged: string[];
}

function describeOutcome(id: string, state: string, p: ControlProcesses): string {
  const parts = [`${id} restarted: ${state} in the API`];
  if (!p.broadcast) parts.push('the other processes were not told (see the API log)');
  for (const a of p.acknowledged) parts.push(`${a.service} pid ${a.pid}: ${a.error ? `failed (${a.error})` : a.state}`);
  for (const o of p.unacknowledged) parts.push(`process ${o.slice(0, 8)}: no answer`);
  return `${parts.join('; ')}.`;
}

/** MCP server health (`GET /v1/mcp/servers`, admin scope), refreshed every 5 s; restart from here. */
export function McpPage() {
  const [servers, setServers] = useState<McpServer[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState<string | null>(null);
  /** What the last restart did in the other processes (the worker's children), from its acknowledgements. */
  const [outcome, setOutcome] = useState<string | null>(null);
  const load = () =>
    api<{ items: McpServer[] }>('GET', '/v1/mcp/servers').then(
      (r) => (setServers(r.items), setError(null)),
      (e: unknown) => {
        reportAuth(e);
        setError(
          e instanceof ApiError && e.status === 403
            ? new Error('MCP server health needs a token with the admin scope.')
            : e,
        );
      },
    );
  useEffect(() => {
    void load();
    const t = setInterval(() => void load(), 5000);
    return () => clearInterval(t);
  }, []);
  const restart = async (id: string) => {
    setBusy(id);
    try {
      const r = await api<McpServer & { processes: ControlProcesses }>(
        'POST',
        `/v1/mcp/servers/${encodeURIComponent(id)}/restart`,
      );
      setOutcome(describeOutcome(id, r.state, r.processes));
    } catch (e) {
      setError(e);
    }
    setBusy(null);
    await load();
  };
  return (
    <section aria-labelledby="mcp-h">
      <h1 id="mcp-h">MCP servers</h1>
      <ErrorText error={error} />
      {outcome ? (
        <p role="status" class="muted">
          {outcome}
        </p>
      ) : null}
      {servers !== null && servers.length === 0 ? (
        <p class="muted">No MCP servers are configured (config/mcp.yaml).</p>
      ) : null}
      {servers && servers.length > 0 ? (
        <div class="table-wrap">
          <table class="events" aria-label="MCP servers">
            <thead>
              <tr>
                <th scope="col">server</th>
                <th scope="col">state</th>
                <th scope="col">protocol</th>
                <th scope="col">tools</th>
                <th scope="col">restarts</th>
                <th scope="col">calls</th>
                <th scope="col">last error</th>
                <th scope="col" />
              </tr>
            </thead>
            <tbody>
              {servers.map((s) => (
                <tr key={s.id} data-server={s.id}>
                  <td>
                    <code>{s.id}</code> <span class="muted">{s.transport}</span>
                  </td>
                  <td>
                    <span class={`badge ${STATE_CLASS[s.state] ?? ''}`}>{s.state}</span>
                  </td>
                  <td>{s.protocol_version ?? '—'}</td>
                  <td title={s.disabled_tools.map((d) => `${d.name}: ${d.reason}`).join('\n')}>
                    {s.tool_count}
                    {s.disabled_tools.length ? ` (${s.disabled_tools.length} disabled)` : ''}
                  </td>
                  <td>{s.restarts}</td>
                  <td>
                    {s.counters.calls}
                    {s.counters.failed_calls ? ` (${s.counters.failed_calls} failed)` : ''}
                  </td>
                  <td class={s.last_error ? 'fail-text' : undefined}>{s.last_error ?? '—'}</td>
                  <td>
                    <button type="button" disabled={busy === s.id} onClick={() => void restart(s.id)}>
                      Restart
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
