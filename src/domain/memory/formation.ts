import { stableUuidOf } from '../stable-id';
import { statementKey } from './memory-record';
import type { SeenText, SourceEvent } from './provenance';

/**
 * End-of-run memory formation (MEMORY_FORMATION, ADR 0043): which durable facts a run's user
 * messages state. Pure and deterministic; the memory decider still decides every write exactly as
 * it decides `memory.remember` (credentials, transient details, dedupe, conflicts).
 */

/** A durable fact a user message states, with the message it came from. */
export interface FormationProposal {
  readonly statement: string;
  /** What it is about; null: the decider derives it from the statement. */
  readonly subject: string | null;
  readonly source: SourceEvent;
}

/** Confidence of an extracted fact: the user's words, but nobody asked to remember them. */
export const EXTRACTED_CONFIDENCE = 0.8;
/** At most this many facts from one run (a long paste is not a biography). */
export const MAX_PROPOSALS_PER_RUN = 10;
const MAX_VALUE_WORDS = 8;

/**
 * Values that describe the task at hand, not the person ("my code is broken", "my file is
 * attached"): a fact about them is a transient detail, never a long-term memory.
 */
const TASK_STATE =
  /\b(?:broken|failing|fails|down|wrong|missing|slow|empty|done|ready|attached|below|above|here|there|this|that|it|not working|crashing|stuck|open|closed|finished|pending)\b/i;

interface Pattern {
  readonly re: RegExp;
  readonly build: (m: RegExpExecArray) => { statement: string; subject: string | null } | null;
}

const clean = (s: string): string => s.replace(/\s+/g, ' ').trim();
const words = (s: string): number => clean(s).split(' ').length;

/** The fact patterns, anchored at the start of a sentence (after an optional "remember that"). */
const PATTERNS: readonly Pattern[] = [
  {
    // "my time zone is Europe/Paris", "our team is called Blue Falcon"
    re: /^((?:my|our)\s+(?:[\p{L}\p{N}'’-]+\s+){0,3}?[\p{L}\p{N}'’-]+)\s+(is|are)\s+(.+)$/iu,
    build: (m) => ({ statement: `${m[1]} ${m[2]} ${m[3]}`, subject: null }),
  },
  {
    // "call me Sam" - what to call the user; a later one supersedes it.
    re: /^(?:please\s+)?call me\s+(.+)$/i,
    build: (m) => ({ statement: `call me ${m[1]}`, subject: 'preferred name' }),
  },
  {
    // "I prefer short answers", "I like tea": each preference is its own subject (no false conflicts).
    re: /^i\s+(?:really\s+|always\s+)?(prefer|like|love|dislike|hate)\s+(.+)$/i,
    build: (m) => ({ statement: `I ${m[1].toLowerCase()} ${m[2]}`, subject: null }),
  },
  {
    re: /^i(?:\s+am|'m|’m)\s+(?:based|located)\s+in\s+(.+)$|^i\s+live\s+in\s+(.+)$/i,
    build: (m) => ({ statement: `I live in ${m[1] ?? m[2]}`, subject: 'location' }),
  },
  {
    re: /^i\s+work\s+(?:at|for)\s+(.+)$/i,
    build: (m) => ({ statement: `I work at ${m[1]}`, subject: 'employer' }),
  },
];

/** The value part of a proposal (after the verb), for the task-state and length checks. */
function valueOf(statement: string): string {
  const m = /\s(?:is|are|me|prefer|like|love|dislike|hate|in|at)\s+(.+)$/i.exec(statement);
  return m ? m[1] : statement;
}

/** The sentences of a message: split at sentence ends and line breaks; questions dropped. */
export function sentencesOf(text: string): string[] {
  return (text.match(/[^.!?;\n]+[.!?;]?/g) ?? [])
    .map((s) => clean(s))
    .filter((s) => s.length > 0 && !s.endsWith('?'))
    .map((s) => s.replace(/[.!;]+$/, '').trim());
}

/** The fact one sentence states, or null. */
export function factOf(sentence: string): { statement: string; subject: string | null } | null {
  const s = clean(sentence).replace(/^(?:please\s+)?(?:remember\s+(?:that\s+)?)/i, '');
  for (const p of PATTERNS) {
    const m = p.re.exec(s);
    if (!m) continue;
    const fact = p.build(m);
    if (!fact) return null;
    const value = valueOf(fact.statement);
    if (words(value) > MAX_VALUE_WORDS || TASK_STATE.test(value)) return null;
    return { statement: clean(fact.statement), subject: fact.subject };
  }
  return null;
}

/**
 * The facts the run's user messages state, first mention first, one per statement, without the
 * ones `alreadyRemembered` holds (a `memory.remember` call of the same run wrote them: formation
 * must not reinforce its own run's write).
 */
export function extractFacts(
  userMessages: readonly SeenText[],
  alreadyRemembered: ReadonlySet<string> = new Set(),
): FormationProposal[] {
  const seen = new Set(alreadyRemembered);
  const out: FormationProposal[] = [];
  for (const msg of userMessages)
    for (const sentence of sentencesOf(msg.text)) {
      const fact = factOf(sentence);
      if (!fact) continue;
      const key = statementKey(fact.statement);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ ...fact, source: msg.event });
      if (out.length >= MAX_PROPOSALS_PER_RUN) return out;
    }
  return out;
}

/**
 * The invocation id a formed memory is written under: derived from the run and the statement, so a
 * formation repeated after a crash finds its own write and records nothing twice (ADR 0043).
 */
export function formationInvocationId(runId: string, statement: string): string {
  return stableUuidOf(`memory-formation\u0000${runId}\u0000${statementKey(statement)}`);
}
