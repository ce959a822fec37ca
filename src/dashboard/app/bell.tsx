import { useEffect, useRef, useState } from 'preact/hooks';
import { api, authHeaders, describeError } from './api';
import { Link, reportAuth } from './nav';

/** A notification as the inbox shows it (docs/notifications.md). */
interface Notice {
  id: string;
  kind: string;
  session_id: string;
  run_id: string | null;
  subject_id: string;
  summary: { title?: string; toolName?: string } & Record<string, unknown>;
  links: Record<string, string>;
  created_at: string;
  read_at: string | null;
}

/**
 * Follows `GET /v1/notifications/events` (fetch, so the bearer token goes along) from the summary's
 * position, calling `onChange` for every frame; reconnects with the last id after a cut.
 */
function followNotifications(from: string, onChange: () => void): () => void {
  let last = from;
  let closed = false;
  let ac: AbortController | null = null;
  const connect = async () => {
    while (!closed) {
      ac = new AbortController();
      try {
        const r = await fetch(`/v1/notifications/events?last_event_id=${encodeURIComponent(last)}`, {
          headers: { accept: 'text/event-stream', ...authHeaders() },
          signal: ac.signal,
        });
        if (!r.ok || !r.body) throw describeError(null, r.status);
        const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let cut: number;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            const id = /^id: ?(.*)$/m.exec(block)?.[1];
            if (id) last = id;
            if (/^event: ?notification$/m.test(block)) onChange();
          }
        }
      } catch {
        /* cut or refused: try again shortly */
      }
      if (!closed) await new Promise((res) => setTimeout(res, 2000));
    }
  };
  void connect();
  return () => {
    closed = true;
    ac?.abort();
  };
}

interface LockManager {
  request(name: string, cb: () => Promise<void>): Promise<void>;
}

/**
 * One notification stream for all of the browser's tabs: a browser allows ~6 connections per host,
 * and a stream per tab would take them all. The tab holding the Web Lock follows the stream and
 * tells the others over a BroadcastChannel; when it closes, another takes the lock. Without either
 * API (a plain-http LAN host is not a secure context), each tab follows its own stream.
 */
function followShared(from: string, onChange: () => void): () => void {
  const locks = (navigator as Navigator & { locks?: LockManager }).locks;
  const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel('agent-core.notifications') : null;
  if (!locks || !channel) return followNotifications(from, onChange);
  channel.onmessage = () => onChange();
  let closed = false;
  let release: (() => void) | null = null;
  void locks.request(
    'agent-core.notifications',
    () =>
      new Promise<void>((done) => {
        if (closed) return done();
        const stop = followNotifications(from, () => {
          onChange();
          channel.postMessage('changed');
        });
        release = () => (stop(), done());
      }),
  );
  return () => {
    closed = true;
    release?.();
    channel.close();
  };
}

type Act = (f: () => Promise<unknown>) => Promise<void>;

/** An approval notification's one-click decisions. */
function ApprovalButtons(props: { approvalId: string; busy: boolean; act: Act }) {
  const resolve = (body: Record<string, unknown>) =>
    void props.act(() => api('POST', `/v1/approvals/${props.approvalId}/resolve`, body));
  return (
    <div class="row">
      <button type="button" class="ok" disabled={props.busy} onClick={() => resolve({ decision: 'approve_once' })}>
        Approve
      </button>
      <button
        type="button"
        class="danger"
        disabled={props.busy}
        onClick={() => resolve({ decision: 'deny', reason: 'denied from the inbox' })}
      >
        Deny
      </button>
    </div>
  );
}

/** A question's inline answer (`POST /v1/runs/{id}/input`). */
function AnswerForm(props: { runId: string; busy: boolean; act: Act }) {
  const [answer, setAnswer] = useState('');
  return (
    <form
      class="row"
      onSubmit={(e) => {
        e.preventDefault();
        if (answer.trim())
          void props.act(() =>
            api('POST', `/v1/runs/${props.runId}/input`, { content: [{ type: 'text', text: answer.trim() }] }),
          );
      }}
    >
      <input
        aria-label="answer"
        value={answer}
        onInput={(e) => setAnswer(e.currentTarget.value)}
        placeholder="Your answer"
      />
      <button type="submit" disabled={props.busy || !answer.trim()}>
        Answer
      </button>
    </form>
  );
}

/** One notification with its one-click answer where one fits: approve/deny, or answer the question. */
function NoticeItem(props: { n: Notice; onDone(): void }) {
  const { n } = props;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const act = async (f: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
      // Resolving an approval marks its notifications read; an answer is marked here.
      await api('POST', `/v1/notifications/${n.id}/read`);
      props.onDone();
    } catch (e) {
      reportAuth(e);
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  const approvalId = n.links.approval?.split('/').pop();
  const open = n.read_at === null;
  return (
    <li class={`notice${open ? ' unread' : ''}`} data-notification={n.id} aria-label={n.summary.title ?? n.kind}>
      <div class="notice-title">
        <strong>{n.summary.title ?? n.kind}</strong>
        {n.summary.toolName ? <code> {n.summary.toolName}</code> : null}
      </div>
      <div class="muted">
        {n.kind} · {new Date(n.created_at).toLocaleString()}
        {n.links.session ? (
          <>
            {' · '}
            <Link href={`/sessions/${n.session_id}`}>session</Link>
          </>
        ) : null}
      </div>
      {open && n.kind === 'approval.requested' && approvalId ? (
        <ApprovalButtons approvalId={approvalId} busy={busy} act={act} />
      ) : null}
      {open && n.kind === 'run.waiting_for_user' && n.run_id ? (
        <AnswerForm runId={n.run_id} busy={busy} act={act} />
      ) : null}
      {open && n.kind !== 'approval.requested' && n.kind !== 'run.waiting_for_user' ? (
        <button type="button" class="link" disabled={busy} onClick={() => void act(async () => undefined)}>
          Mark read
        </button>
      ) : null}
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
    </li>
  );
}

/**
 * The notification bell (issue 31 item 2): the unread count from `GET /v1/notifications/summary`,
 * kept current by the notification stream; a click opens the inbox with inline answers.
 */
export function Bell() {
  const [unread, setUnread] = useState<number | null>(null);
  const [open, setOpen] = useState(false);
  const [items, setItems] = useState<Notice[]>([]);
  const openRef = useRef(open);
  openRef.current = open;
  const refresh = async () => {
    try {
      const s = await api<{ unread: number; last_event_id: string }>('GET', '/v1/notifications/summary');
      setUnread(s.unread);
      if (openRef.current) setItems((await api<{ items: Notice[] }>('GET', '/v1/notifications?limit=20')).items);
      return s.last_event_id;
    } catch (e) {
      reportAuth(e);
      return null;
    }
  };
  useEffect(() => {
    let stop: (() => void) | null = null;
    let gone = false;
    void refresh().then((from) => {
      if (from !== null && !gone) stop = followShared(from, () => void refresh());
    });
    return () => {
      gone = true;
      stop?.();
    };
  }, []);
  useEffect(() => {
    if (open) void refresh();
  }, [open]);
  return (
    <div class="bell">
      <button
        type="button"
        class="link"
        aria-label={`notifications: ${unread ?? 0} unread`}
        aria-expanded={open}
        onClick={() => setOpen(!open)}
      >
        🔔{unread ? <span class="count">{unread}</span> : null}
      </button>
      {open ? (
        <div class="bell-panel">
          {items.length === 0 ? <p class="muted">No notifications.</p> : null}
          <ul aria-label="notifications">
            {items.map((n) => (
              <NoticeItem key={n.id} n={n} onDone={() => void refresh()} />
            ))}
          </ul>
        </div>
      ) : null}
    </div>
  );
}
