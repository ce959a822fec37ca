import { useEffect, useState } from 'preact/hooks';
import { api, type ForkNode, type Message, type Page, type Session } from './api';
import { Link, navigate, reportAuth } from './nav';
import { ErrorText } from './sessions-page';

/**
 * Forking a conversation (issue 33): "Fork from here" on every user message and assistant answer,
 * the messages a fork inherits from its parent, and the fork tree a session belongs to. A fork is a
 * new session whose history is its parent's up to a sequence, read by reference; the parent is never
 * touched.
 */

interface Forked {
  id: string;
}

/** "Fork from here": at an answer, forks after it; at a user message, offers to edit and resend it. */
export function ForkButton(props: { sessionId: string; sequence: number; resend?: string }) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(props.resend ?? '');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const fork = (body: Record<string, unknown>) => {
    setBusy(true);
    api<Forked>('POST', `/v1/sessions/${props.sessionId}/fork`, body)
      .then((f) => navigate(`/sessions/${f.id}`))
      .catch((e) => (reportAuth(e), setError(e)))
      .finally(() => setBusy(false));
  };
  if (props.resend === undefined || !editing) {
    const start = () =>
      props.resend === undefined ? fork({ at_sequence: props.sequence }) : (setText(props.resend), setEditing(true));
    return (
      <span class="fork-action">
        <button type="button" class="quiet" data-fork-at={props.sequence} onClick={start} disabled={busy}>
          {props.resend === undefined ? 'Fork from here' : 'Fork from here (edit and resend)'}
        </button>
        <ErrorText error={error} />
      </span>
    );
  }
  const submit = (ev: Event) => {
    ev.preventDefault();
    fork({ at_sequence: props.sequence, message: { content: [{ type: 'text', text }] } });
  };
  return (
    <form class="fork-edit" onSubmit={submit} aria-label="edit and resend in a fork">
      <label class="grow">
        <span class="sr-only">Edited message</span>
        <textarea name="fork-message" rows={2} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={busy || text.trim() === ''}>
        {busy ? 'Forking…' : 'Fork and send'}
      </button>
      <button type="button" class="quiet" onClick={() => setEditing(false)}>
        Cancel
      </button>
      <ErrorText error={error} />
    </form>
  );
}

/** A fork's origin and the conversation it inherits from its parent, read through the parent. */
export function ForkOrigin(props: { session: Session }) {
  const { session } = props;
  // null until the parent's messages have been read, so the count never shows a transient 0.
  const [inherited, setInherited] = useState<Message[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const at = session.forked_at_sequence ?? null;
  useEffect(() => {
    if (at === null) return;
    api<Page<Message>>('GET', `/v1/sessions/${session.id}/messages?limit=200`).then(
      (p) => setInherited(p.items.filter((m) => m.sequence <= at)),
      (e) => (reportAuth(e), setError(e)),
    );
  }, [session.id, at]);
  if (at === null || !session.parent_session_id) return null;
  return (
    <details class="fork-origin" data-fork-origin open>
      <summary>
        Forked from{' '}
        <Link href={`/sessions/${session.parent_session_id}`}>session {session.parent_session_id.slice(0, 8)}</Link> at
        #{at} · {inherited === null ? 'reading the inherited messages…' : `${inherited.length} inherited messages`}
      </summary>
      {(inherited ?? []).map((m) => (
        <p key={m.sequence} class={`bubble ${m.role} inherited`} data-seq={m.sequence}>
          {m.content.map((c) => c.text ?? '').join('\n')}
        </p>
      ))}
      <ErrorText error={error} />
    </details>
  );
}

/** The fork tree the session belongs to, shown when it has more than one session. */
export function ForkTree(props: { sessionId: string; refresh: number }) {
  const [root, setRoot] = useState<ForkNode | null>(null);
  useEffect(() => {
    api<{ root: ForkNode }>('GET', `/v1/sessions/${props.sessionId}/tree`).then(
      (t) => setRoot(t.root),
      (e) => reportAuth(e),
    );
  }, [props.sessionId, props.refresh]);
  if (!root || root.children.length === 0) return null;
  return (
    <details class="fork-tree" aria-label="fork tree">
      <summary>Fork tree</summary>
      <ul>
        <ForkTreeNode node={root} current={props.sessionId} />
      </ul>
    </details>
  );
}

function ForkTreeNode(props: { node: ForkNode; current: string }) {
  const { node } = props;
  const label = `${node.title || `Session ${node.id.slice(0, 8)}`}${node.forked_at_sequence === null ? '' : ` (at #${node.forked_at_sequence})`}`;
  return (
    <li data-fork-node={node.id}>
      {node.id === props.current ? (
        <strong aria-current="page">{label}</strong>
      ) : (
        <Link href={`/sessions/${node.id}`}>{label}</Link>
      )}
      {node.status === 'deleted' ? <span class="muted"> (deleted)</span> : null}
      {node.children.length > 0 ? (
        <ul>
          {node.children.map((c) => (
            <ForkTreeNode key={c.id} node={c} current={props.current} />
          ))}
        </ul>
      ) : null}
    </li>
  );
}
