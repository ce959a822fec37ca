import { ChildLanes } from './child-lanes';
import { ConsensusView } from './consensus-view';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, type Run, type WireEvent } from './api';
import { RunArtifacts } from './artifacts';
import { describe, json, type ToolNames } from './format';
import { Link, reportAuth } from './nav';
import { TraceLine } from './observability';
import { ConnBadge, JsonBlock, useEventLog } from './session-page';
import { ErrorText, StatusBadge } from './sessions-page';

const TOKEN_CLASSES: [string, string][] = [
  ['uncached_input_tokens', 'uncached input'],
  ['cached_input_tokens', 'cached input'],
  ['cache_write_tokens', 'cache write'],
  ['output_tokens', 'output'],
  ['reasoning_tokens', 'reasoning'],
];

const fmtLimit = (v: unknown) => (v === null || v === undefined ? 'no limit' : String(v));

/** Every persisted event of a run with its sequence and time; usage, cost and counts against limits. */
export function RunPage(props: { id: string }) {
  const [run, setRun] = useState<Run | null>(null);
  const [error, setError] = useState<unknown>(null);
  const { events, conn } = useEventLog(error ? null : `/v1/runs/${props.id}/events`);
  const tools = useMemo<ToolNames>(() => new Map(), [props.id]);

  // The run record (usage, cost, counts) is re-read whenever the log says it changed.
  const marks = events.filter((e) => /^(model\.response|tool\.call\.(completed|failed)|run\.)/.test(e.type)).length;
  useEffect(() => {
    api<Run>('GET', `/v1/runs/${props.id}`).then(setRun, (e) => (reportAuth(e), setError(e)));
  }, [props.id, marks]);

  const limits = events.find((e) => e.type === 'run.queued')?.payload.limits as Record<string, unknown> | undefined;
  const costSources = [
    ...new Set(events.filter((e) => e.type === 'model.response.completed').map((e) => String(e.payload.cost_source))),
  ];

  if (error && !run)
    return (
      <section>
        <h1>Run</h1>
        <ErrorText error={error} />
      </section>
    );
  return (
    <section aria-labelledby="run-h" class="run-page">
      <div class="row">
        <h1 id="run-h" class="grow">
          Run {props.id.slice(0, 8)} <StatusBadge status={run?.status} />
        </h1>
        <ConnBadge state={conn.state} detail={conn.detail} />
      </div>
      {run ? (
        <p>
          <Link href={`/sessions/${run.session_id}`}>Back to the session</Link> · agent {run.agent_id} · model policy{' '}
          {run.model_policy}
        </p>
      ) : null}
      <TraceLine events={events} />
      {run?.failure ? (
        <p class="error" role="alert">
          Failed — {run.failure.reason}: {run.failure.message}
          {run.failure.error_code ? ` (${run.failure.error_code})` : ''}
        </p>
      ) : null}
      {run?.final_text ? <p class="bubble assistant">{run.final_text}</p> : null}
      {run ? <UsageAndLimits run={run} limits={limits} costSources={costSources} /> : null}
      {run?.consensus ? (
        <>
          <h2>Consensus</h2>
          <ConsensusView consensus={run.consensus} />
        </>
      ) : null}
      {events.some((e) => e.type === 'run.waiting_for_children') ? (
        <>
          <h2>Child runs</h2>
          <ChildLanes parentRunId={props.id} refresh={marks} />
        </>
      ) : null}
      <RunArtifacts runId={props.id} refresh={events.filter((e) => e.type === 'artifact.created').length} />
      <h2>Events ({events.length})</h2>
      <EventTable events={events} tools={tools} />
    </section>
  );
}

/** The run's usage by token class with its cost and cost sources, and its counts against its limits. */
function UsageAndLimits(props: { run: Run; limits: Record<string, unknown> | undefined; costSources: string[] }) {
  const { run, limits, costSources } = props;
  return (
    <div class="cards">
      <table class="kv" aria-label="usage by token class">
        <caption>Usage</caption>
        <tbody>
          {TOKEN_CLASSES.map(([k, label]) => (
            <tr key={k}>
              <th scope="row">{label}</th>
              <td data-usage={k}>{run.usage[k] ?? 0}</td>
            </tr>
          ))}
          <tr>
            <th scope="row">cost</th>
            <td data-cost>
              {run.cost}{' '}
              <span class="muted">({costSources.length ? costSources.join(', ') : 'no model call yet'})</span>
            </td>
          </tr>
        </tbody>
      </table>
      <table class="kv" aria-label="counts and limits">
        <caption>Counts / limits</caption>
        <tbody>
          <tr>
            <th scope="row">steps</th>
            <td>
              {run.step_count} / {fmtLimit(limits?.max_steps)}
            </td>
          </tr>
          <tr>
            <th scope="row">model calls</th>
            <td>
              {run.model_call_count} / {fmtLimit(limits?.max_model_calls)}
            </td>
          </tr>
          <tr>
            <th scope="row">tool calls</th>
            <td>
              {run.tool_call_count} / {fmtLimit(limits?.max_tool_calls)}
            </td>
          </tr>
          <tr>
            <th scope="row">cost ceiling</th>
            <td>{fmtLimit(limits?.max_cost)}</td>
          </tr>
          <tr>
            <th scope="row">deadline</th>
            <td>{limits?.deadline_seconds ? `${String(limits.deadline_seconds)} s` : 'none'}</td>
          </tr>
        </tbody>
      </table>
    </div>
  );
}

/** Every persisted event of the run: sequence, time, type, a readable summary and the raw payload. */
function EventTable(props: { events: WireEvent[]; tools: ToolNames }) {
  const { events, tools } = props;
  return (
    <div class="table-wrap">
      <table class="events" aria-label="events">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">time</th>
            <th scope="col">type</th>
            <th scope="col">summary</th>
          </tr>
        </thead>
        <tbody>
          {events.map((e) => {
            const line = describe(e, tools);
            return (
              <tr key={e.sequence} data-seq={e.sequence} class={`k-${line.kind}`}>
                <td class="seq">{e.sequence}</td>
                <td title={e.created_at}>{new Date(e.created_at).toISOString().slice(11, 23)}</td>
                <td>
                  <code>{e.type}</code>
                </td>
                <td>
                  {line.title !== e.type ? <strong>{line.title} </strong> : null}
                  {line.text}
                  {line.json?.map((j) => (
                    <JsonBlock key={j.label} {...j} />
                  ))}
                  <details class="json raw">
                    <summary>payload</summary>
                    <pre>{json(e.payload)}</pre>
                  </details>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
