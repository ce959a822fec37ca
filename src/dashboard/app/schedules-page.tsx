import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type Page } from './api';
import { dateTime } from './format';
import { Link, reportAuth } from './nav';
import { ErrorText } from './sessions-page';

/** A schedule as `GET /v1/schedules` answers it (docs/schedules.md). */
interface Schedule {
  id: string;
  status: 'active' | 'paused' | 'cancelled' | 'completed';
  revision: number;
  title: string | null;
  message: string;
  cadence_description: string;
  time_zone: string;
  next_fire_at: string | null;
  next_fire_at_local: string | null;
  consecutive_failures: number;
  occurrence_count: number;
  last_run_id: string | null;
  last_session_id: string | null;
  paused_reason: string | null;
  updated_at: string;
}

/** One row of a schedule's occurrence ledger. */
interface Occurrence {
  id: string;
  nominal_at: string;
  fired_at: string | null;
  status: 'fired' | 'skipped_overlap' | 'missed' | 'failed';
  run_id: string | null;
  session_id: string | null;
  run_status: string | null;
  missed_count: number;
  reason: string | null;
}

const STATUS_CLASS: Record<string, string> = {
  active: 's-completed',
  paused: 's-waiting_for_approval',
  cancelled: 's-cancelled',
  completed: 's-cancelled',
  fired: 's-completed',
  skipped_overlap: 's-waiting_for_approval',
  missed: 's-cancelled',
  failed: 's-failed',
};

const STATUSES = ['', 'active', 'paused', 'cancelled', 'completed'];

/** The occurrence ledger of one schedule, newest first, each linked to its run. */
function Occurrences(props: { id: string }) {
  const [items, setItems] = useState<Occurrence[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api<Page<Occurrence>>('GET', `/v1/schedules/${props.id}/occurrences?limit=50`).then(
      (r) => setItems(r.items),
      (e: unknown) => (reportAuth(e), setError(e)),
    );
  }, [props.id]);
  if (error) return <ErrorText error={error} />;
  if (!items) return <p class="muted">Loading…</p>;
  if (items.length === 0) return <p class="muted">It has not fired yet.</p>;
  return (
    <ul class="occurrences" aria-label="occurrences">
      {items.map((o) => (
        <li key={o.id}>
          <span class={`badge ${STATUS_CLASS[o.status] ?? ''}`}>{o.status}</span> due {dateTime(o.nominal_at)}
          {o.fired_at ? ` · fired ${dateTime(o.fired_at)}` : ''}
          {o.missed_count > 0 ? ` · ${o.missed_count} missed instant(s) coalesced` : ''}
          {o.run_id ? (
            <>
              {' · '}
              <Link href={`/runs/${o.run_id}`}>run {o.run_id.slice(0, 8)}</Link>
              {o.run_status ? ` (${o.run_status})` : ''}
            </>
          ) : null}
          {o.reason ? <span class="muted"> · {o.reason}</span> : null}
        </li>
      ))}
    </ul>
  );
}

/** One schedule: what it sends and when, its next firing in its own zone, and what may be done to it. */
function ScheduleRow(props: { s: Schedule; onChanged(): void }) {
  const { s } = props;
  const [open, setOpen] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const act = async (method: 'POST' | 'DELETE', path: string) => {
    try {
      await api(method, path);
      setError(null);
      props.onChanged();
    } catch (e) {
      reportAuth(e);
      setError(e);
    }
  };
  const live = s.status === 'active' || s.status === 'paused';
  return (
    <li data-schedule={s.id}>
      <div>
        <span class={`badge ${STATUS_CLASS[s.status] ?? ''}`}>{s.status}</span> <strong>{s.title ?? s.message}</strong>
      </div>
      <div class="meta">
        {s.cadence_description} ({s.time_zone}) · next firing{' '}
        <span class="next-firing">
          {s.next_fire_at_local && s.status === 'active'
            ? s.next_fire_at_local
            : s.status === 'paused'
              ? 'paused'
              : '—'}
        </span>{' '}
        · {s.occurrence_count} occurrence(s)
        {s.consecutive_failures > 0 ? ` · ${s.consecutive_failures} failed in a row` : ''}
        {s.last_run_id ? (
          <>
            {' · last '}
            <Link href={`/runs/${s.last_run_id}`}>run {s.last_run_id.slice(0, 8)}</Link>
          </>
        ) : null}{' '}
        · revision {s.revision}, updated {dateTime(s.updated_at)}
      </div>
      {s.title ? <p class="statement">{s.message}</p> : null}
      {s.paused_reason ? <p class="question">Paused: {s.paused_reason}</p> : null}
      <ErrorText error={error} />
      <div class="actions">
        <button type="button" class="quiet" onClick={() => setOpen(!open)} aria-expanded={open}>
          {open ? 'Hide occurrences' : 'Occurrences'}
        </button>{' '}
        {s.status === 'active' ? (
          <button type="button" class="quiet" onClick={() => void act('POST', `/v1/schedules/${s.id}/pause`)}>
            Pause
          </button>
        ) : null}
        {s.status === 'paused' ? (
          <button type="button" class="quiet" onClick={() => void act('POST', `/v1/schedules/${s.id}/resume`)}>
            Resume
          </button>
        ) : null}{' '}
        {live && confirming ? (
          <span class="confirm" role="group" aria-label="confirm cancellation">
            Cancel this schedule for good? A run it already started keeps going.{' '}
            <button
              type="button"
              class="danger"
              autoFocus
              onClick={() => void act('DELETE', `/v1/schedules/${s.id}?reason=cancelled+from+the+dashboard`)}
            >
              Yes, cancel it
            </button>{' '}
            <button type="button" onClick={() => setConfirming(false)}>
              Keep
            </button>
          </span>
        ) : live ? (
          <button type="button" class="quiet" onClick={() => setConfirming(true)}>
            Cancel schedule
          </button>
        ) : null}
      </div>
      {open ? <Occurrences id={s.id} /> : null}
    </li>
  );
}

/**
 * Schedules (`/schedules`, issue 29): each schedule's cadence in words and its next firing in its
 * own time zone, its occurrences linked to their runs, pause, resume and cancel.
 */
export function SchedulesPage() {
  const [items, setItems] = useState<Schedule[] | null>(null);
  const [status, setStatus] = useState('');
  const [error, setError] = useState<unknown>(null);
  const load = (st = status) => {
    const params = new URLSearchParams({ limit: '100' });
    if (st) params.set('status', st);
    return api<Page<Schedule>>('GET', `/v1/schedules?${params.toString()}`).then(
      (r) => (setItems(r.items), setError(null)),
      (e: unknown) => {
        reportAuth(e);
        setError(
          e instanceof ApiError && e.status === 403
            ? new Error('The Schedules page needs a token with schedules.read.')
            : e,
        );
      },
    );
  };
  useEffect(() => void load(), []);
  return (
    <section aria-labelledby="schedules-h">
      <h1 id="schedules-h">Schedules</h1>
      <p class="muted">
        Create one by asking the agent ("every day at 08:00 Europe/Paris say good morning"), with{' '}
        <code>agent schedule create</code>, or <code>POST /v1/schedules</code>.
      </p>
      <form class="inline" onSubmit={(e) => (e.preventDefault(), void load())}>
        <select
          aria-label="status"
          value={status}
          onChange={(e) => {
            const st = (e.target as HTMLSelectElement).value;
            setStatus(st);
            void load(st);
          }}
        >
          {STATUSES.map((x) => (
            <option key={x} value={x}>
              {x || 'any status'}
            </option>
          ))}
        </select>{' '}
        <button type="submit">Refresh</button>
      </form>
      <ErrorText error={error} />
      {items !== null && items.length === 0 ? <p class="muted">No schedules here.</p> : null}
      <ul class="memories schedules" aria-label="schedules">
        {(items ?? []).map((s) => (
          <ScheduleRow key={`${s.id}@${s.revision}`} s={s} onChanged={() => void load()} />
        ))}
      </ul>
    </section>
  );
}
