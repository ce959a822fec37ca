import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, newKey, postIdempotent, TERMINAL_STATUS, type Session, type WireEvent } from './api';
import { describe, json, statusAfter, time, type ToolNames } from './format';
import { ForkButton, ForkOrigin, ForkTree } from './fork';
import { Link, reportAuth } from './nav';
import { ErrorText, StatusBadge } from './sessions-page';
import { openStream, type ConnState } from './sse';

/** What a message sent while a run works does (ADR 0038); the UI defaults to enqueue. */
type Strategy = 'enqueue' | 'interrupt' | 'rollback' | 'reject';
const STRATEGIES: readonly { value: Strategy; label: string }[] = [
  { value: 'enqueue', label: 'Queue after the current run' },
  { value: 'interrupt', label: 'Interrupt it (keep its work)' },
  { value: 'rollback', label: 'Interrupt and roll back its work' },
  { value: 'reject', label: 'Refuse while it works' },
];

export function ConnBadge(props: { state: ConnState; detail?: string }) {
  const text: Record<ConnState, string> = {
    connecting: 'connecting…',
    live: 'live',
    reconnecting: 'reconnecting…',
    ended: 'stream ended',
    failed: `stream refused: ${props.detail ?? ''}`,
  };
  return (
    <span class={`conn c-${props.state}`} role="status" aria-live="polite" data-conn={props.state}>
      {text[props.state]}
    </span>
  );
}

/**
 * Events of one stream, in sequence order, each once. Frames are batched into one render per
 * animation frame, so a replay of hundreds of events renders once, not hundreds of times.
 */
export function useEventLog(url: string | null) {
  const [events, setEvents] = useState<WireEvent[]>([]);
  const [deltas, setDeltas] = useState<Record<string, string>>({});
  const [conn, setConn] = useState<{ state: ConnState; detail?: string }>({ state: 'connecting' });
  useEffect(() => {
    if (!url) return;
    let pending: WireEvent[] = [];
    let pendingDeltas: Record<string, string> = {};
    let raf = 0;
    const flush = () => {
      raf = 0;
      const evs = pending;
      const ds = pendingDeltas;
      pending = [];
      pendingDeltas = {};
      if (evs.length) setEvents((prev) => prev.concat(evs));
      const completed = new Set(evs.filter((e) => e.type === 'assistant.message.completed').map((e) => e.run_id ?? ''));
      if (Object.keys(ds).length || completed.size)
        setDeltas((prev) => {
          const next = { ...prev };
          for (const [k, v] of Object.entries(ds)) next[k] = (next[k] ?? '') + v;
          for (const k of completed) delete next[k];
          return next;
        });
    };
    const schedule = () => {
      if (!raf) raf = requestAnimationFrame(flush);
    };
    const stream = openStream(url, {
      onEvent: (e) => {
        pending.push(e);
        if (e.type === 'assistant.message.completed' && e.run_id) delete pendingDeltas[e.run_id];
        schedule();
      },
      onDelta: (d) => {
        if (d.type !== 'text_delta' || !d.run_id) return;
        pendingDeltas[d.run_id] = (pendingDeltas[d.run_id] ?? '') + d.text;
        schedule();
      },
      onState: (state, detail) => {
        // A stream that ended has delivered everything: render what is still batched for the next
        // frame first, so "stream ended" never shows above a timeline that is not complete yet.
        if (state === 'ended' && raf) {
          cancelAnimationFrame(raf);
          flush();
        }
        setConn({ state, detail });
      },
    });
    return () => {
      stream.close();
      if (raf) cancelAnimationFrame(raf);
    };
  }, [url]);
  return { events, deltas, conn };
}

interface RunGroup {
  id: string;
  status: string;
  events: WireEvent[];
  question: string | null;
  failure: string | null;
  answered: boolean;
}

function groupRuns(events: WireEvent[]): { runs: RunGroup[]; sessionEvents: WireEvent[] } {
  const runs = new Map<string, RunGroup>();
  const sessionEvents: WireEvent[] = [];
  for (const e of events) {
    if (!e.run_id) {
      sessionEvents.push(e);
      continue;
    }
    let g = runs.get(e.run_id);
    if (!g)
      runs.set(
        e.run_id,
        (g = { id: e.run_id, status: 'queued', events: [], question: null, failure: null, answered: false }),
      );
    g.events.push(e);
    g.status = statusAfter(e.type, g.status);
    if (e.type === 'run.waiting_for_user') g.question = String(e.payload.question ?? '');
    if (e.type === 'run.failed') g.failure = `${e.payload.reason}: ${e.payload.message}`;
    if (e.type === 'assistant.message.completed') g.answered = true;
  }
  return { runs: [...runs.values()], sessionEvents };
}

export function JsonBlock(props: { label: string; value: unknown; untrusted?: boolean }) {
  return (
    <details class={props.untrusted ? 'json untrusted' : 'json'}>
      <summary>
        {props.untrusted ? <span class="flag">untrusted</span> : null} {props.label}
      </summary>
      <pre>{json(props.value)}</pre>
    </details>
  );
}

function EventRow(props: { e: WireEvent; tools: ToolNames }) {
  const { e } = props;
  const line = describe(e, props.tools);
  return (
    <li class={`ev k-${line.kind}`} data-seq={e.sequence} data-type={e.type}>
      <span class="seq" title={e.created_at}>
        #{e.sequence}
      </span>{' '}
      <strong>{line.title}</strong> <span class="txt">{line.text}</span>
      {line.json?.map((j) => (
        <JsonBlock key={j.label} {...j} />
      ))}
    </li>
  );
}

function AnswerBox(props: { runId: string; question: string }) {
  const [text, setText] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="answer"
      onSubmit={(ev) => {
        ev.preventDefault();
        setBusy(true);
        api('POST', `/v1/runs/${props.runId}/input`, { content: [{ type: 'text', text }] })
          .then(() => (setText(''), setError(null)))
          .catch((e) => (reportAuth(e), setError(e)))
          .finally(() => setBusy(false));
      }}
    >
      <label>
        <span class="q">The agent asks: {props.question}</span>
        <input name="answer" value={text} onInput={(e) => setText(e.currentTarget.value)} autoFocus />
      </label>{' '}
      <button type="submit" disabled={busy}>
        Answer
      </button>
      <ErrorText error={error} />
    </form>
  );
}

function RunCard(props: { g: RunGroup; delta: string | undefined; tools: ToolNames; sessionId: string }) {
  const { g } = props;
  const [error, setError] = useState<unknown>(null);
  const [cancelling, setCancelling] = useState(false);
  const active = !TERMINAL_STATUS.has(g.status);
  const user = g.events.find((e) => e.type === 'user.message.created');
  const answers = g.events.filter((e) => e.type === 'assistant.message.completed');
  const rows = g.events.filter((e) => e.type !== 'user.message.created' && e.type !== 'assistant.message.completed');
  const cancel = () => {
    setCancelling(true);
    api('POST', `/v1/runs/${g.id}/cancel`, {})
      .catch((e) => (reportAuth(e), setError(e)))
      .finally(() => setCancelling(false));
  };
  return (
    <article class="run" data-run={g.id} data-status={g.status} aria-label={`run ${g.id.slice(0, 8)}`}>
      {user ? (
        <p class="bubble user" data-seq={user.sequence} data-type={user.type}>
          {userText(user)}
        </p>
      ) : null}
      {user && !active ? (
        <ForkButton sessionId={props.sessionId} sequence={user.sequence} resend={userText(user)} />
      ) : null}
      <div class="run-head">
        <StatusBadge status={g.status} /> <Link href={`/runs/${g.id}`}>run {g.id.slice(0, 8)} details</Link>
        {active ? (
          <button type="button" class="quiet" onClick={cancel} disabled={cancelling}>
            Cancel run
          </button>
        ) : null}
      </div>
      <details class="timeline" open>
        <summary>Timeline ({rows.length} events)</summary>
        <ol>
          {rows.map((e) => (
            <EventRow key={e.sequence} e={e} tools={props.tools} />
          ))}
        </ol>
      </details>
      {g.status === 'waiting_for_approval' ? (
        <p class="notice">
          Waiting for a human approval — open the <Link href="/console">approval console</Link>.
        </p>
      ) : null}
      {g.status === 'waiting_for_user' && g.question !== null ? <AnswerBox runId={g.id} question={g.question} /> : null}
      {props.delta && !g.answered ? (
        <p class="bubble assistant streaming" aria-live="polite">
          {props.delta}
        </p>
      ) : null}
      {answers.map((a) => (
        <div key={a.sequence}>
          <p class="bubble assistant" data-seq={a.sequence} data-type={a.type}>
            {String(a.payload.text ?? '')}
          </p>
          <ForkButton sessionId={props.sessionId} sequence={a.sequence} />
        </div>
      ))}
      {g.failure ? (
        <p class="error" role="alert">
          Run failed — {g.failure}
        </p>
      ) : null}
      <ErrorText error={error} />
    </article>
  );
}

const userText = (user: WireEvent) =>
  ((user.payload.content ?? []) as { text?: string }[]).map((c) => c.text ?? '').join('\n');

/** A session: its runs as chat turns with compact timelines, live over the session's SSE stream. */
export function SessionPage(props: { id: string }) {
  const [session, setSession] = useState<Session | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const { events, deltas, conn } = useEventLog(loadError ? null : `/v1/sessions/${props.id}/events`);
  const bottom = useRef<HTMLDivElement>(null);
  const tools = useMemo<ToolNames>(() => new Map(), [props.id]);

  useEffect(() => {
    api<Session>('GET', `/v1/sessions/${props.id}`).then(setSession, (e) => (reportAuth(e), setLoadError(e)));
  }, [props.id]);

  const { runs, sessionEvents } = useMemo(() => groupRuns(events), [events]);
  const last = runs.at(-1);
  // While the last run works or waits for an approval, a message needs a multitask strategy
  // (issue 33, ADR 0038): the composer stays enabled with a picker, enqueue by default. A run
  // waiting for the user takes the next message as its answer.
  const working = last !== undefined && !TERMINAL_STATUS.has(last.status) && last.status !== 'waiting_for_user';
  useEffect(() => {
    bottom.current?.scrollIntoView({ block: 'end' });
  }, [events.length, Object.values(deltas).join('').length]);

  if (loadError)
    return (
      <section>
        <h1>Session</h1>
        <ErrorText error={loadError} />
        <Link href="/">Back to sessions</Link>
      </section>
    );
  return (
    <section class="session" aria-labelledby="session-h">
      <div class="row">
        <h1 id="session-h" class="grow">
          {session?.title || `Session ${props.id.slice(0, 8)}`}
        </h1>
        <ConnBadge state={conn.state} detail={conn.detail} />
      </div>
      <ForkTree sessionId={props.id} refresh={runs.length} />
      {session ? <ForkOrigin session={session} /> : null}
      <ul class="session-events" aria-label="session events">
        {sessionEvents.map((e) => (
          <li key={e.sequence} class="ev k-session" data-seq={e.sequence} data-type={e.type}>
            <span class="seq">#{e.sequence}</span> {describe(e, tools).title} · {time(e.created_at)}
          </li>
        ))}
      </ul>
      {runs.length === 0 && conn.state === 'live' ? (
        <p class="muted">No messages yet. Ask "What is 17 multiplied by 23?" or "send hello to the newsletter".</p>
      ) : null}
      <div class="runs">
        {runs.map((g) => (
          <RunCard key={g.id} g={g} delta={deltas[g.id]} tools={tools} sessionId={props.id} />
        ))}
      </div>
      <div ref={bottom} />
      <Composer sessionId={props.id} working={working} lastStatus={last?.status} />
    </section>
  );
}

/**
 * The message composer: Enter sends, Shift+Enter breaks the line; each text keeps one
 * Idempotency-Key until it is accepted or refused. While the last run works it offers the multitask
 * strategy (issue 33, ADR 0038), enqueue by default.
 */
function Composer(props: { sessionId: string; working: boolean; lastStatus: string | undefined }) {
  const [text, setText] = useState('');
  const [strategy, setStrategy] = useState<Strategy>('enqueue');
  const [sendError, setSendError] = useState<unknown>(null);
  const [sending, setSending] = useState(false);
  const draft = useRef<{ key: string; text: string } | null>(null);
  const send = async (ev: Event) => {
    ev.preventDefault();
    // The same text keeps its key, so a retried submission can never start a second run.
    if (!draft.current || draft.current.text !== text) draft.current = { key: newKey(), text };
    const sent = text;
    setSending(true);
    try {
      await postIdempotent(
        `/v1/sessions/${props.sessionId}/messages`,
        { content: [{ type: 'text', text }], ...(props.working ? { multitask_strategy: strategy } : {}) },
        draft.current.key,
      );
      draft.current = null;
      // Clear only what was sent: the run can answer (over SSE) before this response arrives, and
      // the next message typed meanwhile must survive.
      setText((current) => (current === sent ? '' : current));
      setSendError(null);
    } catch (e) {
      reportAuth(e);
      setSendError(e);
      // A refusal (not a lost request) is final for this body: the next attempt gets a fresh key.
      if (!(e instanceof Error && 'status' in e && (e as { status: number }).status === 0)) draft.current = null;
    } finally {
      setSending(false);
    }
  };

  return (
    <>
      <form class="composer" onSubmit={(e) => void send(e)}>
        <label class="grow">
          <span class="sr-only">Message</span>
          <textarea
            name="message"
            rows={2}
            placeholder={props.lastStatus === 'waiting_for_user' ? 'Your answer…' : 'Message the agent…'}
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
                e.preventDefault();
                (e.currentTarget.form as HTMLFormElement).requestSubmit();
              }
            }}
          />
        </label>
        {props.working ? (
          <label>
            <span class="sr-only">While the agent works</span>
            <select
              name="multitask_strategy"
              value={strategy}
              aria-describedby="composer-wait"
              onChange={(e) => setStrategy(e.currentTarget.value as Strategy)}
            >
              {STRATEGIES.map((s) => (
                <option key={s.value} value={s.value}>
                  {s.label}
                </option>
              ))}
            </select>
          </label>
        ) : null}
        <button type="submit" disabled={sending} aria-describedby={props.working ? 'composer-wait' : undefined}>
          {sending ? 'Sending…' : 'Send'}
        </button>
      </form>
      {props.working ? (
        <p id="composer-wait" class="muted" data-composer-wait>
          {props.lastStatus === 'waiting_for_approval'
            ? 'The last run waits for an approval in the console; a new message is handled as picked: queued after it, or interrupting it.'
            : 'The agent is still working on the last message; a new message is handled as picked: queued after it, or interrupting it.'}
        </p>
      ) : null}
      <ErrorText error={sendError} />
    </>
  );
}
