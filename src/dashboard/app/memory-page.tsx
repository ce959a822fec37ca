import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type Page } from './api';
import { dateTime } from './format';
import { Link, reportAuth } from './nav';
import { ErrorText } from './sessions-page';

/** A memory as `GET /v1/memories` answers it (docs/memory.md). */
interface Memory {
  id: string;
  subject: string | null;
  statement: string | null;
  scope: string;
  status: string;
  confidence: number;
  sensitivity: string;
  trust: string;
  attribution: string | null;
  superseded_by: string | null;
  conflicts_with: string[];
  question: string | null;
  flagged: boolean;
  revision: number;
  updated_at: string;
  updated_by: string | null;
}

interface MemoryDetail extends Memory {
  source_events: { id: number; session_id: string; sequence: number; type: string; run_id: string | null }[];
  used_by: {
    retrieval_id: string;
    session_id: string;
    run_id: string | null;
    purpose: string;
    score: number | null;
    created_at: string;
  }[];
}

const STATUS_CLASS: Record<string, string> = {
  active: 's-completed',
  tentative: 's-waiting_for_approval',
  conflicting: 's-failed',
  superseded: 's-cancelled',
  expired: 's-cancelled',
};

const STATUSES = ['', 'active', 'tentative', 'conflicting', 'superseded', 'expired'];

/** Where a memory came from and which runs used it. */
function Details(props: { id: string }) {
  const [d, setD] = useState<MemoryDetail | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api<MemoryDetail>('GET', `/v1/memories/${props.id}`).then(setD, setError);
  }, [props.id]);
  if (error) return <ErrorText error={error} />;
  if (!d) return <p class="muted">Loading…</p>;
  return (
    <div class="memory-details">
      <h3>Source events</h3>
      {d.source_events.length === 0 ? <p class="muted">None recorded.</p> : null}
      <ul aria-label="source events">
        {d.source_events.map((e) => (
          <li key={e.id}>
            <code>{e.type}</code> #{e.sequence} of{' '}
            <Link href={`/sessions/${e.session_id}`}>session {e.session_id.slice(0, 8)}</Link>
            {e.run_id ? (
              <>
                {' '}
                (<Link href={`/runs/${e.run_id}`}>run {e.run_id.slice(0, 8)}</Link>)
              </>
            ) : null}
          </li>
        ))}
      </ul>
      <h3>Used by</h3>
      {d.used_by.length === 0 ? <p class="muted">No run has used it yet.</p> : null}
      <ul aria-label="runs that used it">
        {d.used_by.map((u) => (
          <li key={u.retrieval_id}>
            {u.run_id ? <Link href={`/runs/${u.run_id}`}>run {u.run_id.slice(0, 8)}</Link> : 'a run'} · {u.purpose}
            {u.score !== null ? ` · score ${u.score}` : ''} · {dateTime(u.created_at)}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** One memory: its statement (editable), labels, and delete with confirmation. */
function MemoryRow(props: { m: Memory; onChanged: () => void }) {
  const { m } = props;
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(m.statement ?? '');
  const [confirming, setConfirming] = useState(false);
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const act = async (f: () => Promise<unknown>) => {
    try {
      await f();
      setError(null);
      props.onChanged();
    } catch (e) {
      reportAuth(e);
      setError(e);
    }
  };
  return (
    <li data-memory={m.id}>
      <div>
        <span class={`badge ${STATUS_CLASS[m.status] ?? ''}`}>{m.status}</span> <strong>{m.subject}</strong>{' '}
        {editing ? (
          <form
            class="inline"
            aria-label="edit statement"
            onSubmit={(e) => {
              e.preventDefault();
              void act(() => api('PATCH', `/v1/memories/${m.id}`, { statement: draft })).then(() => setEditing(false));
            }}
          >
            <input
              aria-label="statement"
              value={draft}
              maxLength={2000}
              onInput={(e) => setDraft((e.target as HTMLInputElement).value)}
            />{' '}
            <button type="submit">Save</button>{' '}
            <button type="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </form>
        ) : (
          <span class="statement">{m.statement}</span>
        )}
      </div>
      <div class="meta">
        confidence {m.confidence} · {m.trust}
        {m.attribution ? ` (${m.attribution})` : ''} · {m.scope} · {m.sensitivity} · revision {m.revision} · updated{' '}
        {dateTime(m.updated_at)}
        {m.updated_by ? ` by ${m.updated_by}` : ''}
        {m.superseded_by ? ` · superseded by ${m.superseded_by.slice(0, 8)}` : ''}
        {m.flagged ? ' · flagged: blocked at load (injection scan)' : ''}
      </div>
      {m.question ? <p class="question">{m.question}</p> : null}
      <ErrorText error={error} />
      <div class="actions">
        <button type="button" class="quiet" onClick={() => setOpen(!open)} aria-expanded={open}>
          {open ? 'Hide details' : 'Details'}
        </button>{' '}
        {!editing ? (
          <button type="button" class="quiet" onClick={() => (setDraft(m.statement ?? ''), setEditing(true))}>
            Edit
          </button>
        ) : null}{' '}
        {m.status === 'conflicting' || m.status === 'tentative' ? (
          <button
            type="button"
            class="quiet"
            onClick={() => void act(() => api('PATCH', `/v1/memories/${m.id}`, { status: 'active' }))}
          >
            Confirm
          </button>
        ) : null}{' '}
        {confirming ? (
          <span class="confirm" role="group" aria-label="confirm deletion">
            Forget this memory?{' '}
            <button
              type="button"
              class="danger"
              autoFocus
              onClick={() => void act(() => api('DELETE', `/v1/memories/${m.id}`))}
            >
              Yes, forget
            </button>{' '}
            <button type="button" onClick={() => setConfirming(false)}>
              Keep
            </button>
          </span>
        ) : (
          <button type="button" class="quiet" onClick={() => setConfirming(true)}>
            Delete
          </button>
        )}
      </div>
      {open ? <Details id={m.id} /> : null}
    </li>
  );
}

/**
 * What the agent remembers (`/memories`, issue 30): search, filter by status, edit a statement,
 * confirm one side of a conflict, delete (the statement is erased everywhere), and see each
 * memory's source events and the runs that used it.
 */
export function MemoryPage() {
  const [items, setItems] = useState<Memory[] | null>(null);
  const [q, setQ] = useState('');
  const [status, setStatus] = useState('');
  const [error, setError] = useState<unknown>(null);
  const load = (query = q, st = status) => {
    const params = new URLSearchParams({ limit: '200' });
    if (query.trim()) params.set('q', query.trim());
    if (st) params.set('status', st);
    return api<Page<Memory>>('GET', `/v1/memories?${params.toString()}`).then(
      (r) => (setItems(r.items), setError(null)),
      (e: unknown) => {
        reportAuth(e);
        setError(
          e instanceof ApiError && e.status === 403 ? new Error('The Memory page needs a token with memory.read.') : e,
        );
      },
    );
  };
  useEffect(() => void load(), []);
  return (
    <section aria-labelledby="memory-h">
      <h1 id="memory-h">Memory</h1>
      <form
        role="search"
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          void load();
        }}
      >
        <input
          aria-label="search memories"
          placeholder="Search"
          value={q}
          onInput={(e) => setQ((e.target as HTMLInputElement).value)}
        />{' '}
        <select
          aria-label="status"
          value={status}
          onChange={(e) => {
            const st = (e.target as HTMLSelectElement).value;
            setStatus(st);
            void load(q, st);
          }}
        >
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s || 'any status'}
            </option>
          ))}
        </select>{' '}
        <button type="submit">Search</button>
      </form>
      <ErrorText error={error} />
      {items !== null && items.length === 0 ? <p class="muted">Nothing remembered here.</p> : null}
      <ul class="memories" aria-label="memories">
        {(items ?? []).map((m) => (
          <MemoryRow key={`${m.id}@${m.revision}`} m={m} onChanged={() => void load()} />
        ))}
      </ul>
    </section>
  );
}
