import { useEffect, useState } from 'preact/hooks';
import { api, type WireEvent } from './api';
import { reportAuth } from './nav';

/** GET /v1/observability: where a trace id links to (OTEL_TRACE_UI_URL), read once per page load. */
interface ObservabilityConfig {
  trace_ui_url: string | null;
  tracing_enabled: boolean;
}

let config: Promise<ObservabilityConfig> | null = null;
function observabilityConfig(): Promise<ObservabilityConfig> {
  config ??= api<ObservabilityConfig>('GET', '/v1/observability').catch((e: unknown) => {
    config = null;
    throw e;
  });
  return config;
}

/** The run's trace id (from its `run.started`, ADR 0015), linked to the trace viewer when configured. */
export function TraceLine(props: { events: readonly WireEvent[] }) {
  const started = props.events.find((e) => e.type === 'run.started' && typeof e.payload.trace_id === 'string');
  const traceId = started ? String(started.payload.trace_id) : null;
  const [template, setTemplate] = useState<string | null>(null);
  useEffect(() => {
    if (!traceId) return;
    observabilityConfig().then(
      (c) => setTemplate(c.trace_ui_url),
      () => setTemplate(null),
    );
  }, [traceId]);
  if (!props.events.some((e) => e.type === 'run.started')) return null;
  if (!traceId)
    return (
      <p class="muted" data-trace="off">
        No trace: tracing was off when this run started (set OTEL_EXPORTER_OTLP_ENDPOINT).
      </p>
    );
  const href = template ? template.replaceAll('{trace_id}', traceId) : null;
  return (
    <p data-trace={traceId}>
      Trace{' '}
      {href ? (
        <a href={href} target="_blank" rel="noopener noreferrer">
          <code>{traceId}</code>
        </a>
      ) : (
        <code>{traceId}</code>
      )}
    </p>
  );
}

interface Summary {
  runs_by_status: Record<string, number>;
  models: {
    provider: string;
    model: string;
    calls: number;
    failed: number;
    avg_latency_ms: number | null;
    p50_latency_ms: number | null;
    p95_latency_ms: number | null;
  }[];
  tokens_by_class: Record<string, number>;
  tools: { tool: string; calls: number; failed: number }[];
}

const STATUS_ORDER = [
  'queued',
  'running',
  'waiting_for_approval',
  'waiting_for_user',
  'completed',
  'failed',
  'cancelled',
];
const ms = (v: number | null) => (v === null ? '—' : `${v} ms`);

/** The metrics panel: runs by status, model latency, tokens by class, tool failures (your own runs). */
export function MetricsPanel() {
  const [s, setS] = useState<Summary | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<Summary>('GET', '/v1/observability/summary').then(setS, (e: unknown) => {
      reportAuth(e);
      setError(e instanceof Error ? e.message : String(e));
    });
  }, []);
  if (error) return <p class="muted">Metrics unavailable: {error}</p>;
  if (!s) return null;
  const rank = (k: string) => (STATUS_ORDER.includes(k) ? STATUS_ORDER.indexOf(k) : STATUS_ORDER.length);
  const statuses = Object.keys(s.runs_by_status).sort((a, b) => rank(a) - rank(b));
  return (
    <section aria-labelledby="metrics-h" class="metrics">
      <h2 id="metrics-h">Metrics</h2>
      <div class="cards">
        <table class="kv" aria-label="runs by status">
          <caption>Runs by status</caption>
          <tbody>
            {statuses.length === 0 ? (
              <tr>
                <td class="muted">no runs yet</td>
              </tr>
            ) : (
              statuses.map((k) => (
                <tr key={k}>
                  <th scope="row">{k.replaceAll('_', ' ')}</th>
                  <td data-runs={k}>{s.runs_by_status[k]}</td>
                </tr>
              ))
            )}
          </tbody>
        </table>
        <table aria-label="model latency">
          <caption>Model latency</caption>
          <thead>
            <tr>
              <th scope="col">model</th>
              <th scope="col">calls</th>
              <th scope="col">p50</th>
              <th scope="col">p95</th>
              <th scope="col">failed</th>
            </tr>
          </thead>
          <tbody>
            {s.models.map((m) => (
              <tr key={`${m.provider}:${m.model}`} data-model={`${m.provider}:${m.model}`}>
                <td>
                  {m.provider}:{m.model}
                </td>
                <td>{m.calls}</td>
                <td>{ms(m.p50_latency_ms)}</td>
                <td>{ms(m.p95_latency_ms)}</td>
                <td>{m.failed}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <table class="kv" aria-label="tokens by class">
          <caption>Tokens by class</caption>
          <tbody>
            {Object.entries(s.tokens_by_class).map(([k, v]) => (
              <tr key={k}>
                <th scope="row">{k.replaceAll('_', ' ')}</th>
                <td data-tokens={k}>{v}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <table aria-label="tool failures">
          <caption>Tool failures</caption>
          <thead>
            <tr>
              <th scope="col">tool</th>
              <th scope="col">failed</th>
              <th scope="col">calls</th>
            </tr>
          </thead>
          <tbody>
            {s.tools.map((t) => (
              <tr key={t.tool} data-tool={t.tool}>
                <td>{t.tool}</td>
                <td>{t.failed}</td>
                <td>{t.calls}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p class="muted">
        Over your own runs, from the read models. Operators scrape <code>/metrics</code> (Prometheus).
      </p>
    </section>
  );
}
