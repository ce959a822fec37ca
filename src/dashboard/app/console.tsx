import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type Approval, type Page } from './api';
import { EditArguments } from './edit-arguments';
import { dateTime, json } from './format';
import { Link, reportAuth } from './nav';
import { ErrorText } from './sessions-page';

const POLL_MS = 1000;

function timeLeft(expiresAt: string | null, now: number): string {
  if (!expiresAt) return 'no expiry';
  const ms = new Date(expiresAt).getTime() - now;
  if (ms <= 0) return 'expired';
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const pad = (n: number) => String(n).padStart(2, '0');
  return h ? `${h}:${pad(m)}:${pad(s % 60)} left` : `${m}:${pad(s % 60)} left`;
}

function PendingCard(props: { a: Approval; now: number; onResolved(id: string): void }) {
  const { a } = props;
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [editing, setEditing] = useState(false);
  const resolve = async (
    decision: 'approve_once' | 'approve_with_edits' | 'deny',
    edited?: Record<string, unknown>,
  ) => {
    if (decision === 'deny' && !reason.trim()) {
      setError(new Error('Give a reason to deny: the agent reports it back.'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await api('POST', `/v1/approvals/${a.id}/resolve`, {
        decision,
        ...(reason.trim() ? { reason: reason.trim() } : {}),
        ...(edited ? { arguments: edited } : {}),
      });
      props.onResolved(a.id);
    } catch (e) {
      reportAuth(e);
      if (e instanceof ApiError && e.status === 409) {
        setError(new Error(`Already resolved elsewhere: ${e.message}`));
        props.onResolved(a.id);
      } else setError(e);
    } finally {
      setBusy(false);
    }
  };
  const left = timeLeft(a.expires_at, props.now);
  return (
    <li class="approval" data-approval={a.id} aria-label={`approval for ${a.tool_name ?? a.action_kind}`}>
      <div class="row">
        <strong class="grow">
          <code>{a.tool_name ?? a.action_kind}</code> <span class={`badge risk-${a.risk}`}>risk {a.risk}</span>
        </strong>
        <span class={left === 'expired' ? 'countdown expired' : 'countdown'} data-countdown>
          {left}
        </span>
      </div>
      <p class="summary">{a.action_summary}</p>
      <p class="muted">
        Run of <strong data-owner>{a.principal_id}</strong> · policy: {a.policy_reason} · asked {dateTime(a.created_at)}{' '}
        · <Link href={`/sessions/${a.session_id}`}>session</Link> · <Link href={`/runs/${a.run_id}`}>run</Link>
      </p>
      <details class="json" open>
        <summary>exact arguments</summary>
        <pre>{json(a.arguments)}</pre>
      </details>
      <div class="row resolve">
        <label class="grow">
          <span class="sr-only">Reason</span>
          <input
            name="reason"
            placeholder="Reason (required to deny)"
            maxLength={2000}
            value={reason}
            onInput={(e) => setReason(e.currentTarget.value)}
          />
        </label>
        <button type="button" class="ok" disabled={busy} onClick={() => void resolve('approve_once')}>
          Approve
        </button>
        {a.arguments_schema && !editing ? (
          <button type="button" disabled={busy} onClick={() => setEditing(true)}>
            Edit arguments
          </button>
        ) : null}
        <button type="button" class="danger" disabled={busy} onClick={() => void resolve('deny')}>
          Deny
        </button>
      </div>
      {a.arguments_schema && editing ? (
        <EditArguments
          initial={a.arguments}
          schema={a.arguments_schema}
          busy={busy}
          onApprove={(edited) => void resolve('approve_with_edits', edited)}
          onCancel={() => setEditing(false)}
          onEdit={() => setError(null)}
        />
      ) : null}
      <ErrorText error={error} />
    </li>
  );
}

/** Pending approvals (polled, so new ones appear and ones resolved elsewhere vanish) and the history. */
export function ConsolePage() {
  const [pending, setPending] = useState<Approval[] | null>(null);
  const [resolved, setResolved] = useState<Approval[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [now, setNow] = useState(Date.now());
  const [gone, setGone] = useState<Set<string>>(new Set());

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout>;
    let round = 0;
    const poll = async () => {
      try {
        const p = await api<Page<Approval>>('GET', '/v1/approvals?status=pending&limit=100');
        if (stopped) return;
        setPending(p.items);
        if (round++ % 3 === 0 || p.items.length === 0) {
          const r = await api<Page<Approval>>('GET', '/v1/approvals?status=resolved&limit=20');
          if (!stopped) setResolved(r.items);
        }
        setError(null);
      } catch (e) {
        reportAuth(e);
        if (!stopped) setError(e);
      }
      if (!stopped) timer = setTimeout(() => void poll(), POLL_MS);
    };
    void poll();
    const tick = setInterval(() => setNow(Date.now()), 1000);
    return () => {
      stopped = true;
      clearTimeout(timer);
      clearInterval(tick);
    };
  }, []);

  const onResolved = (id: string) => {
    setGone((g) => new Set(g).add(id));
    void api<Page<Approval>>('GET', '/v1/approvals?status=resolved&limit=20').then(
      (r) => setResolved(r.items),
      () => undefined,
    );
  };
  const shown = (pending ?? []).filter((a) => !gone.has(a.id));

  return (
    <section aria-labelledby="console-h">
      <h1 id="console-h">Approvals</h1>
      <ErrorText error={error} />
      <h2>
        Pending <span class="count">({shown.length})</span>
      </h2>
      {pending !== null && shown.length === 0 ? <p class="muted">Nothing is waiting for a decision.</p> : null}
      <ul class="approvals" aria-label="pending approvals">
        {shown.map((a) => (
          <PendingCard key={a.id} a={a} now={now} onResolved={onResolved} />
        ))}
      </ul>
      <h2>Resolved</h2>
      <div class="table-wrap">
        <table class="events" aria-label="resolved approvals">
          <thead>
            <tr>
              <th scope="col">tool</th>
              <th scope="col">run of</th>
              <th scope="col">summary</th>
              <th scope="col">decision</th>
              <th scope="col">by</th>
              <th scope="col">when</th>
            </tr>
          </thead>
          <tbody>
            {resolved.map((a) => (
              <tr key={a.id} data-resolved={a.id}>
                <td>
                  <code>{a.tool_name}</code>
                </td>
                <td>{a.principal_id}</td>
                <td>{a.action_summary}</td>
                <td class={a.decision === 'approved' ? 'ok-text' : 'fail-text'}>
                  {a.decision ?? a.status}
                  {a.edit ? ' with edits' : ''}
                  {a.reason ? ` — ${a.reason}` : ''}
                  {a.edit ? (
                    <details class="json" data-edited>
                      <summary>edited arguments</summary>
                      <pre>{json(a.edit.arguments)}</pre>
                    </details>
                  ) : null}
                </td>
                <td>{a.resolved_by ?? '—'}</td>
                <td>{dateTime(a.resolved_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
