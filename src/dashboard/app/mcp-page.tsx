import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api';
import { reportAuth } from './nav';
import { describeChange, McpServerEditor, type ChangeOutcome } from './mcp-editor';
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

/** One server's row: its health, and restart, edit and delete. */
function ServerRow(props: {
  s: McpServer;
  busy: boolean;
  act: (id: string, what: 'restart' | 'edit' | 'delete') => void;
}) {
  const { s, busy, act } = props;
  return (
    <tr data-server={s.id}>
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
        <button type="button" disabled={busy} onClick={() => act(s.id, 'restart')}>
          Restart
        </button>{' '}
        <button type="button" disabled={busy} onClick={() => act(s.id, 'edit')}>
          Edit
        </button>{' '}
        <button type="button" disabled={busy} onClick={() => act(s.id, 'delete')}>
          Delete
        </button>
      </td>
    </tr>
  );
}

/** Restart, edit (load the settings into the editor) and delete, each reporting what every process did. */
function useServerActions(load: () => Promise<void>) {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  /** What the last change did in the other processes (the worker's children), from their acknowledgements. */
  const [outcome, setOutcome] = useState<string | null>(null);
  /** The editor: null closed; id null adds a server. */
  const [editing, setEditing] = useState<{ id: string | null; initial: string | null } | null>(null);
  const path = (id: string) => `/v1/mcp/servers/${encodeURIComponent(id)}`;
  const act = async (id: string, what: 'restart' | 'edit' | 'delete') => {
    setBusy(id);
    try {
      if (what === 'edit') {
        const r = await api<{ settings: unknown }>('GET', `${path(id)}/settings`);
        setEditing({ id, initial: JSON.stringify(r.settings, null, 2) });
      } else {
        const r = await api<ChangeOutcome>(
          what === 'restart' ? 'POST' : 'DELETE',
          what === 'restart' ? `${path(id)}/restart` : path(id),
        );
        setOutcome(describeChange(what === 'restart' ? 'restarted' : 'deleted', id, r));
      }
      setError(null);
    } catch (e) {
      setError(e);
    }
    setBusy(null);
    await load();
  };
  const done = (msg: string) => {
    setEditing(null);
    if (msg) setOutcome(msg);
    void load();
  };
  return { busy, error, setError, outcome, editing, setEditing, act, done };
}

/** MCP servers (`GET /v1/mcp/servers`, admin scope), refreshed every 5 s; add, edit, delete and restart them. */
export function McpPage() {
  const [servers, setServers] = useState<McpServer[] | null>(null);
  const load = () =>
    api<{ items: McpServer[] }>('GET', '/v1/mcp/servers').then(
      (r) => (setServers(r.items), a.setError(null)),
      (e: unknown) => {
        reportAuth(e);
        a.setError(
          e instanceof ApiError && e.status === 403
            ? new Error('MCP server health needs a token with the admin scope.')
            : e,
        );
      },
    );
  const a = useServerActions(load);
  useEffect(() => {
    void load();
    const t = setInterval(() => void load(), 5000);
    return () => clearInterval(t);
  }, []);
  return (
    <section aria-labelledby="mcp-h">
      <h1 id="mcp-h">MCP servers</h1>
      <ErrorText error={a.error} />
      {a.outcome ? (
        <p role="status" class="muted">
          {a.outcome}
        </p>
      ) : null}
      {a.editing ? (
        <McpServerEditor key={a.editing.id ?? '+'} id={a.editing.id} initial={a.editing.initial} onDone={a.done} />
      ) : (
        <p>
          <button type="button" onClick={() => a.setEditing({ id: null, initial: null })}>
            Add server
          </button>
        </p>
      )}
      {servers !== null && servers.length === 0 ? (
        <p class="muted">No MCP servers are configured (config/mcp.yaml, or add one here).</p>
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
                <ServerRow key={s.id} s={s} busy={a.busy === s.id} act={(id, what) => void a.act(id, what)} />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
