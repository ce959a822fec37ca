import { useState } from 'preact/hooks';
import { api } from './api';
import { ErrorText } from './sessions-page';

/** What a change answered: the state here and the other processes' acknowledgements (ADR 0052). */
export interface ChangeOutcome {
  state: string;
  processes: {
    broadcast: boolean;
    acknowledged: { service: string; pid: number; state: string | null; error: string | null }[];
    unacknowledged: string[];
  };
}

export function describeChange(verb: string, id: string, r: ChangeOutcome): string {
  const parts = [`${id} ${verb}: ${r.state} in the API`];
  if (!r.processes.broadcast) parts.push('the other processes were not told (see the API log)');
  for (const a of r.processes.acknowledged)
    parts.push(`${a.service} pid ${a.pid}: ${a.error ? `failed (${a.error})` : a.state}`);
  for (const o of r.processes.unacknowledged) parts.push(`process ${o.slice(0, 8)}: no answer`);
  return `${parts.join('; ')}.`;
}

const EXAMPLE = JSON.stringify(
  {
    id: 'files',
    transport: { type: 'stdio', command: '${node}', args: ['server.js', 'stdio'], env_allowlist: ['HOME'] },
    restart: { strategy: 'on_failure', max_restarts: 5 },
    classification: { side_effect: 'read', risk: 'low', idempotency: 'read_only' },
  },
  null,
  2,
);

/**
 * The add / edit form of the MCP page: a server entry as config/mcp.yaml spells it, in JSON. With
 * `id` it edits that server's settings (`PUT …/settings`, the whole entry), else it adds one
 * (`POST /v1/mcp/servers`). Refusals show the API's message, which names the field.
 */
export function McpServerEditor(props: { id: string | null; initial: string | null; onDone: (msg: string) => void }) {
  const [text, setText] = useState(props.initial ?? EXAMPLE);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      setError(new Error('The entry is not valid JSON.'));
      return;
    }
    setBusy(true);
    try {
      const r = props.id
        ? await api<ChangeOutcome>('PUT', `/v1/mcp/servers/${encodeURIComponent(props.id)}/settings`, body)
        : await api<ChangeOutcome>('POST', '/v1/mcp/servers', body);
      const id = props.id ?? String((body as { id?: unknown }).id);
      props.onDone(describeChange(props.id ? 'changed' : 'added', id, r));
    } catch (err) {
      setError(err);
    }
    setBusy(false);
  };
  const label = props.id ? `Settings of ${props.id}` : 'New MCP server';
  return (
    <form class="mcp-editor" aria-label={label} onSubmit={(e) => void submit(e)}>
      <h2>{label}</h2>
      <p class="muted">
        One server entry as in config/mcp.yaml (JSON). Environment values are variable names, never values.
      </p>
      <textarea
        name="mcp-entry"
        aria-label="server entry (JSON)"
        rows={14}
        cols={80}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      <ErrorText error={error} />
      <p>
        <button type="submit" disabled={busy}>
          {props.id ? 'Save settings' : 'Add server'}
        </button>{' '}
        <button type="button" onClick={() => props.onDone('')}>
          Cancel
        </button>
      </p>
    </form>
  );
}
