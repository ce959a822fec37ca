import { useEffect, useState } from 'preact/hooks';
import { api, TERMINAL } from './api';
import { describe, type ToolNames } from './format';
import { Link, reportAuth } from './nav';
import { useEventLog } from './session-page';
import { StatusBadge } from './sessions-page';

/**
 * The child runs of a parent's `delegate.run` (issue 32, ADR 0037) as expandable lanes under the
 * parent's timeline: each lane a child's status, usage and, opened, its own live timeline and answer
 * (read from the child's run stream, never copied into the parent's).
 */
interface ChildRun {
  run_id: string;
  session_id: string;
  brief_index: number;
  status: string;
  usage: Record<string, number | string>;
}

export function ChildLanes(props: { parentRunId: string; refresh: number }) {
  const [children, setChildren] = useState<ChildRun[]>([]);
  useEffect(() => {
    api<{ items: ChildRun[] }>('GET', `/v1/runs/${props.parentRunId}/children`).then(
      (r) => setChildren(r.items),
      (e) => reportAuth(e),
    );
  }, [props.parentRunId, props.refresh]);
  if (children.length === 0) return null;
  return (
    <section class="child-lanes" aria-label="child runs">
      {children.map((c) => (
        <ChildLane key={c.run_id} child={c} />
      ))}
    </section>
  );
}

function ChildLane(props: { child: ChildRun }) {
  const { child } = props;
  const [open, setOpen] = useState(false);
  return (
    <details class="child-lane" data-child={child.run_id} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        Child {child.brief_index + 1} <StatusBadge status={child.status} /> · {String(child.usage.model_calls ?? 0)}{' '}
        model calls · {String(child.usage.tool_calls ?? 0)} tool calls ·{' '}
        <Link href={`/runs/${child.run_id}`}>run {child.run_id.slice(0, 8)}</Link>
      </summary>
      {open ? <ChildTimeline runId={child.run_id} /> : null}
    </details>
  );
}

function ChildTimeline(props: { runId: string }) {
  const { events } = useEventLog(`/v1/runs/${props.runId}/events`);
  const [tools] = useState<ToolNames>(() => new Map());
  const answer = events.find((e) => e.type === 'assistant.message.completed');
  const ended = events.some((e) => TERMINAL.has(e.type) || e.type === 'run.interrupted');
  return (
    <div class="child-timeline">
      <ol>
        {events.map((e) => (
          <li key={e.sequence} class={`ev k-${describe(e, tools).kind}`} data-seq={e.sequence}>
            {describe(e, tools).title}
          </li>
        ))}
      </ol>
      {answer ? <p class="bubble assistant">{String(answer.payload.text ?? '')}</p> : null}
      {!ended ? <p class="muted">working…</p> : null}
    </div>
  );
}
