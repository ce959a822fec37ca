import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type Page, type Run, type Session } from './api';
import { dateTime } from './format';
import { Link, navigate, reportAuth } from './nav';
import { MetricsPanel } from './observability';

const PAGE = 20;

export function StatusBadge(props: { status: string | null | undefined }) {
  const s = props.status ?? 'no runs';
  return <span class={`badge s-${s.replace(/[^a-z_]/g, '')}`}>{s.replaceAll('_', ' ')}</span>;
}

export function ErrorText(props: { error: unknown }) {
  if (!props.error) return null;
  const msg = props.error instanceof Error ? props.error.message : String(props.error);
  return (
    <p class="error" role="alert">
      {msg}
    </p>
  );
}

/**
 * Sessions, newest activity first (keyset-paged), each with the status of its latest run; the search
 * box finds sessions by words of their title or messages (the API's full-text `q`).
 */
export function SessionsPage() {
  const { items, setItems, cursor, loaded, runStatus, error, setError, load } = useSessionList();
  const [confirming, setConfirming] = useState<string | null>(null);
  const [rowError, setRowError] = useState<Record<string, string>>({});
  const [search, setSearch] = useState('');
  const [searched, setSearched] = useState('');

  const find = (e: Event) => {
    e.preventDefault();
    const words = search.trim();
    setSearched(words);
    void load(null, words);
  };

  const remove = async (id: string) => {
    try {
      await api('DELETE', `/v1/sessions/${id}`);
      setItems((prev) => prev.filter((s) => s.id !== id));
      setConfirming(null);
    } catch (err) {
      reportAuth(err);
      const detail =
        err instanceof ApiError && err.code === 'invalid_state_transition'
          ? `Not deleted: ${err.message}${err.details.run_id ? ` (run ${String(err.details.run_id).slice(0, 8)} is still active)` : ''}`
          : `Not deleted: ${err instanceof Error ? err.message : String(err)}`;
      setRowError((prev) => ({ ...prev, [id]: detail }));
      setConfirming(null);
    }
  };

  return (
    <section aria-labelledby="sessions-h">
      <h1 id="sessions-h">Sessions</h1>
      <NewSessionForm onError={setError} />
      <form class="row" role="search" onSubmit={find}>
        <label class="grow">
          <span class="sr-only">Search titles and messages</span>
          <input
            name="q"
            type="search"
            placeholder="Search titles and messages"
            maxLength={200}
            value={search}
            onInput={(e) => setSearch(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Search</button>
      </form>
      <ErrorText error={error} />
      {loaded && items.length === 0 ? (
        <p class="muted">
          {searched ? `No session matches “${searched}”.` : 'No sessions yet. Create one to start a conversation.'}
        </p>
      ) : null}
      <ul class="sessions" aria-label="sessions">
        {items.map((s) => (
          <SessionRow
            key={s.id}
            session={s}
            status={s.last_run_id ? (runStatus[s.id] ?? '…') : null}
            error={rowError[s.id]}
            confirming={confirming === s.id}
            onAsk={() => (setConfirming(s.id), setRowError((p) => ({ ...p, [s.id]: '' })))}
            onKeep={() => setConfirming(null)}
            onDelete={() => void remove(s.id)}
          />
        ))}
      </ul>
      {cursor ? (
        <button type="button" onClick={() => void load(cursor, searched)}>
          Load more
        </button>
      ) : null}
      {loaded ? <MetricsPanel /> : null}
    </section>
  );
}

/** One session of the list: its title, latest run's status, agent and activity, and deletion with a confirmation. */
function SessionRow(props: {
  session: Session;
  status: string | null;
  error: string | undefined;
  confirming: boolean;
  onAsk(): void;
  onKeep(): void;
  onDelete(): void;
}) {
  const s = props.session;
  return (
    <li class="session-row" data-session={s.id}>
      <div class="grow">
        <Link href={`/sessions/${s.id}`} class="title">
          {s.title || `Session ${s.id.slice(0, 8)}`}
        </Link>
        <div class="meta">
          <StatusBadge status={props.status} /> {s.agent_id} v{s.agent_version} · updated {dateTime(s.updated_at)}
        </div>
        {props.error ? (
          <p class="error" role="alert">
            {props.error}
          </p>
        ) : null}
      </div>
      {props.confirming ? (
        <span class="confirm" role="group" aria-label="confirm deletion">
          Delete this session?{' '}
          <button type="button" class="danger" onClick={props.onDelete} autoFocus>
            Yes, delete
          </button>{' '}
          <button type="button" onClick={props.onKeep}>
            Keep
          </button>
        </span>
      ) : (
        <button
          type="button"
          class="quiet"
          aria-label={`Delete session ${s.title || s.id.slice(0, 8)}`}
          onClick={props.onAsk}
        >
          Delete
        </button>
      )}
    </li>
  );
}

/** The sessions list's pages (keyset cursor, optional full-text words) and each session's latest run status. */
function useSessionList() {
  const [items, setItems] = useState<Session[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [runStatus, setRunStatus] = useState<Record<string, string>>({});
  const [error, setError] = useState<unknown>(null);
  const load = async (after: string | null, words: string) => {
    try {
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (after) q.set('cursor', after);
      if (words) q.set('q', words);
      const page = await api<Page<Session>>('GET', `/v1/sessions?${q}`);
      setItems((prev) => (after ? [...prev, ...page.items] : page.items));
      setCursor(page.next_cursor);
      setLoaded(true);
      setError(null);
      const runs = await Promise.all(
        page.items
          .filter((s) => s.last_run_id)
          .map((s) =>
            api<Run>('GET', `/v1/runs/${s.last_run_id}`).then(
              (r) => [s.id, r.status] as const,
              () => [s.id, 'unknown'] as const,
            ),
          ),
      );
      setRunStatus((prev) => ({ ...prev, ...Object.fromEntries(runs) }));
    } catch (e) {
      reportAuth(e);
      setError(e);
    }
  };
  useEffect(() => {
    void load(null, '');
  }, []);
  return { items, setItems, cursor, loaded, runStatus, error, setError, load };
}

/** Creates a session (with an optional title) and opens it. */
function NewSessionForm(props: { onError(e: unknown): void }) {
  const [title, setTitle] = useState('');
  const [busy, setBusy] = useState(false);
  const create = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      const s = await api<{ id: string }>('POST', '/v1/sessions', title.trim() ? { title: title.trim() } : {});
      navigate(`/sessions/${s.id}`);
    } catch (err) {
      reportAuth(err);
      props.onError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="row" onSubmit={create}>
      <label class="grow">
        <span class="sr-only">Title (optional)</span>
        <input
          name="title"
          placeholder="Title (optional)"
          maxLength={500}
          value={title}
          onInput={(e) => setTitle(e.currentTarget.value)}
        />
      </label>
      <button type="submit" disabled={busy}>
        New session
      </button>
    </form>
  );
}
