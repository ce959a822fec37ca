import type { AgentSpec } from '../agent';

/**
 * Consensus mode (issue 32 item 5, ADR 0047): several engines answer the same task independently as
 * child runs without tools, and a synthesizer merges their proposals into the one answer the agent
 * delivers. Settings live in the agent's YAML (`mode: consensus`, `consensus: {…}`), kept in its
 * metadata like `delegation`.
 */

/** The message prefix that asks for consensus unless the agent names another. */
export const DEFAULT_CONSENSUS_PREFIX = 'consensus:';
/** How many times a failed engine (or the synthesizer) is sampled again, with a varied framing. */
export const DEFAULT_MAX_RESAMPLES = 1;
export const MAX_ENGINES = 8;
export const MAX_RESAMPLES = 3;

export interface ConsensusSettings {
  /** `consensus`: every message of the agent is answered by consensus; `single`: only prefixed ones. */
  readonly mode: 'single' | 'consensus';
  /** The prefix that asks for consensus (case-insensitive); null: none does. */
  readonly prefix: string | null;
  /** The engines' model policies (default: the agent's own, twice). */
  readonly engines: readonly string[];
  /** How many proposals the synthesis wants: failed engines are re-sampled until it has them. */
  readonly quorum: number;
  readonly maxResamples: number;
  /** The synthesizer's model policy (default: the agent's own). */
  readonly synthesizer: string;
}

/** A run answered by consensus: the agent's settings and the question its message asks. */
export interface ConsensusRun {
  readonly settings: ConsensusSettings;
  readonly question: string;
}

interface ConsensusYaml {
  prefix?: unknown;
  engines?: unknown;
  quorum?: unknown;
  max_resamples?: unknown;
  synthesizer?: unknown;
}

/**
 * Why an agent's `mode`/`consensus` settings are refused, naming the field (`/consensus/quorum …`),
 * or null when they are valid. Checked when the agent files load, so a bad list never reaches a run.
 */
export function consensusConfigError(mode: unknown, raw: unknown): string | null {
  if (mode !== undefined && mode !== 'single' && mode !== 'consensus') return '/mode must be one of single, consensus';
  if (raw === undefined) return null;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return '/consensus must be an object';
  const c = raw as ConsensusYaml & Record<string, unknown>;
  const unknown = Object.keys(c).find(
    (k) => !['prefix', 'engines', 'quorum', 'max_resamples', 'synthesizer'].includes(k),
  );
  if (unknown) return `/consensus/${unknown} is not a consensus setting`;
  if (c.prefix !== undefined && c.prefix !== null && (typeof c.prefix !== 'string' || c.prefix.trim() === ''))
    return '/consensus/prefix must be a non-empty string or null';
  const count = Array.isArray(c.engines) ? c.engines.length : 2;
  return (
    enginesError(c.engines) ??
    rangeError(c.quorum, 1, count, `/consensus/quorum must be an integer from 1 to the number of engines (${count})`) ??
    rangeError(
      c.max_resamples,
      0,
      MAX_RESAMPLES,
      `/consensus/max_resamples must be an integer from 0 to ${MAX_RESAMPLES}`,
    ) ??
    (c.synthesizer !== undefined && !isPolicy(c.synthesizer)
      ? '/consensus/synthesizer must be a model policy (a non-empty string without spaces)'
      : null)
  );
}

/** `message` unless `v` is absent or an integer in min..max. */
function rangeError(v: unknown, min: number, max: number, message: string): string | null {
  return v === undefined || (Number.isInteger(v) && (v as number) >= min && (v as number) <= max) ? null : message;
}

function enginesError(engines: unknown): string | null {
  if (engines === undefined) return null;
  if (!Array.isArray(engines) || engines.length < 1 || engines.length > MAX_ENGINES)
    return `/consensus/engines must be a list of 1 to ${MAX_ENGINES} model policies`;
  const bad = engines.findIndex((e) => !isPolicy(e));
  if (bad >= 0) return `/consensus/engines/${bad} must be a model policy (a non-empty string without spaces)`;
  return null;
}

function isPolicy(v: unknown): v is string {
  return typeof v === 'string' && /^\S{1,200}$/.test(v);
}

/** The agent's settings (validated when its file loaded); defaults around the run's model policy. */
export function consensusSettingsOf(agent: Pick<AgentSpec, 'metadata'>, modelPolicy: string): ConsensusSettings {
  const c = (agent.metadata.consensus ?? {}) as ConsensusYaml;
  const engines = Array.isArray(c.engines) ? (c.engines as string[]) : [modelPolicy, modelPolicy];
  return {
    mode: agent.metadata.mode === 'consensus' ? 'consensus' : 'single',
    prefix: c.prefix === null ? null : typeof c.prefix === 'string' ? c.prefix : DEFAULT_CONSENSUS_PREFIX,
    engines,
    quorum: typeof c.quorum === 'number' ? Math.min(c.quorum, engines.length) : engines.length,
    maxResamples: typeof c.max_resamples === 'number' ? c.max_resamples : DEFAULT_MAX_RESAMPLES,
    synthesizer: typeof c.synthesizer === 'string' ? c.synthesizer : modelPolicy,
  };
}

/**
 * The question a message asks for consensus on: the text after the prefix, or the whole text for an
 * agent in consensus mode; null when the message is an ordinary turn.
 */
export function consensusQuestion(text: string, s: Pick<ConsensusSettings, 'mode' | 'prefix'>): string | null {
  const trimmed = text.trim();
  if (s.prefix !== null && trimmed.toLowerCase().startsWith(s.prefix.toLowerCase())) {
    const q = trimmed.slice(s.prefix.length).trim();
    return q === '' ? null : q;
  }
  return s.mode === 'consensus' && trimmed !== '' ? trimmed : null;
}
