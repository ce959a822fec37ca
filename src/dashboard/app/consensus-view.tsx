import type { Consensus } from './api';
import { Link } from './nav';

/**
 * A consensus run (issue 32, ADR 0047): the question, every engine's proposal (model output, shown
 * as text), the samples that failed and why, and the synthesis the agent delivered — from the run
 * view's `consensus`, re-read as the run's events arrive.
 */
export function ConsensusView(props: { consensus: Consensus }) {
  const c = props.consensus;
  const used = new Set(c.synthesis?.proposals ?? []);
  return (
    <section class="consensus" aria-label="consensus">
      <p>
        Question: <q>{c.question}</q> · {c.rounds.length} round(s)
      </p>
      <ol class="proposals" aria-label="proposals">
        {c.proposals.map((p) => (
          <li key={p.run_id} data-run={p.run_id} class={used.has(p.run_id) ? 'used' : ''}>
            <strong>
              Engine {p.slot + 1} ({p.engine})
            </strong>
            {p.attempt > 1 ? ` · sample ${p.attempt}` : ''} ·{' '}
            <Link href={`/runs/${p.run_id}`}>run {p.run_id.slice(0, 8)}</Link>
            {used.has(p.run_id) ? ' · used in the synthesis' : ''}
            <p class="bubble proposal">{p.text}</p>
          </li>
        ))}
      </ol>
      {c.failures.length > 0 ? (
        <ul class="consensus-failures" aria-label="failed samples">
          {c.failures.map((f) => (
            <li key={f.run_id}>
              {f.role === 'engine' ? `Engine ${f.slot + 1}` : 'Synthesizer'} ({f.engine}) · sample {f.attempt} ·{' '}
              {f.status}: {f.error} · <Link href={`/runs/${f.run_id}`}>run {f.run_id.slice(0, 8)}</Link>
            </li>
          ))}
        </ul>
      ) : null}
      {c.synthesis ? (
        <div class="synthesis" aria-label="synthesis">
          <strong>Synthesis ({c.synthesis.synthesizer})</strong> ·{' '}
          <Link href={`/runs/${c.synthesis.run_id}`}>run {c.synthesis.run_id.slice(0, 8)}</Link>
          <p class="bubble assistant">{c.synthesis.text}</p>
        </div>
      ) : (
        <p class="muted">synthesizing…</p>
      )}
    </section>
  );
}
