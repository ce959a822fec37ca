import { findSecret } from '../events/secret-scan';
import { scanForInjection } from '../skills/skill';
import { unstorableReason } from '../events/storable-text';

/**
 * Long-term memory records (plan Milestone 9, issue 30, ADR 0035): the vocabulary and the pure
 * checks every write path shares (the `memory.remember` tool, a user's edit, formation).
 */

/** Who may recall a memory: its owner principal, its owner in one agent's sessions, or everyone in the tenant. */
export const MEMORY_SCOPES = ['principal', 'agent', 'tenant'] as const;
export type MemoryScope = (typeof MEMORY_SCOPES)[number];

/** `sensitive` is stored only when the policy says so (`memory.sensitive: allow`). */
export const MEMORY_SENSITIVITIES = ['public', 'personal', 'sensitive'] as const;
export type MemorySensitivity = (typeof MEMORY_SENSITIVITIES)[number];

/**
 * `active`: recalled and in snapshots. `tentative`: from untrusted content, attributed, low
 * confidence, recalled only with its label. `conflicting`: contradicts another memory of close
 * confidence; both wait for the user. The rest are ends: `superseded` (a newer statement won),
 * `deleted` (text erased), `expired` (past `expires_at`).
 */
export const MEMORY_STATUSES = ['active', 'tentative', 'conflicting', 'superseded', 'deleted', 'expired'] as const;
export type MemoryStatus = (typeof MEMORY_STATUSES)[number];
/** Statuses a memory can still be recalled (and contradicted) in. */
export const LIVE_STATUSES: readonly MemoryStatus[] = ['active', 'tentative', 'conflicting'];

/**
 * Where a statement came from, decided by deterministic code, never by the model: `user` (the
 * user's own words, or a user's edit), `inferred` (the model's proposal, grounded in no user
 * message), `external` (tool output, MCP results, web text: untrusted, never instructions).
 */
export const MEMORY_TRUSTS = ['user', 'inferred', 'external'] as const;
export type MemoryTrust = (typeof MEMORY_TRUSTS)[number];

export const MAX_STATEMENT_CHARS = 2000;
export const MAX_SUBJECT_CHARS = 200;
/** Confidence of a new memory by source, and the ceiling of untrusted content. */
export const DEFAULT_CONFIDENCE: Readonly<Record<MemoryTrust, number>> = { user: 0.9, inferred: 0.6, external: 0.3 };
export const EXTERNAL_CONFIDENCE_CEILING = 0.4;
/** Two contradicting statements this close in confidence are both `conflicting`, with a question. */
export const CONFLICT_MARGIN = 0.15;

/** Rounded to hundredths, so every fold (and the database's float) agrees. */
export function roundConfidence(c: number): number {
  return Math.round(Math.min(1, Math.max(0, c)) * 100) / 100;
}

const collapse = (s: string): string => s.replace(/\s+/g, ' ').trim();
const LEADING = /^(?:that\s+)?(?:(?:my|our|your|the|user's|users')\s+)/i;

/** The comparison key of a subject: lower case, collapsed, without a leading possessive or article. */
export function subjectKey(subject: string): string {
  return collapse(subject)
    .toLowerCase()
    .replace(LEADING, '')
    .replace(/^[\s"'`.,;:!?-]+|[\s"'`.,;:!?-]+$/g, '');
}

/** The comparison key of a statement: lower case, collapsed, without end punctuation. */
export function statementKey(statement: string): string {
  return collapse(statement)
    .toLowerCase()
    .replace(/^[\s"'`]+|[\s"'`.,;:!?]+$/g, '');
}

/** "my team is called X", "the admin password is X", "Alice's birthday is X": the noun phrase before the verb. */
const SUBJECT_PATTERN =
  /^(?:that\s+)?((?:my|our|the)\s+)?((?:[\p{L}\p{N}'’-]+\s+){0,5}?[\p{L}\p{N}'’-]+)\s+(?:is|are|was|were)\s/iu;

/**
 * The subject a statement is about when the model names none: the noun phrase of "my <x> is …"
 * (possessive or article dropped); otherwise the whole statement (so only its exact duplicate
 * dedupes, and nothing is taken for a contradiction by accident).
 */
export function deriveSubject(statement: string): string {
  const s = collapse(statement);
  const m = SUBJECT_PATTERN.exec(s);
  const phrase = m ? m[2] : s;
  return phrase.slice(0, MAX_SUBJECT_CHARS);
}

/**
 * What a deletion erases besides the statement itself: its value ("Blue Falcon" of "my team is
 * called Blue Falcon"), which answers quote without the rest — when it reads as a name (several
 * words, a capital, a digit or a slash), so a plain word such as "blue" is not erased from
 * everything the owner ever said.
 */
export function erasableFragments(statement: string): string[] {
  const s = collapse(statement);
  const m = /\s(?:is|are|was|were)\s+(?:called\s+|named\s+)?(.+?)[.!]*$/i.exec(s);
  const value = m?.[1]?.trim() ?? '';
  const nameLike = value.length >= 3 && (/\s/.test(value) || /[\p{Lu}\p{N}/]/u.test(value));
  return nameLike && value.toLowerCase() !== s.toLowerCase() ? [s, value] : [s];
}

const CREDENTIAL_WORDS =
  /\b(?:pass(?:word|phrase|code)?s?|pwd|pin(?:\s+code)?|secret(?:\s+key)?|api[\s_-]?keys?|access[\s_-]?(?:key|token)s?|tokens?|credentials?|private[\s_-]?keys?|2fa|otp)\b(?:\s+[\p{L}\p{N}'’-]+){0,4}?\s*(?:is|are|was|=|:)\s*\S+/iu;

/** Why a statement is credential-shaped (the secret scan's kinds, or `credential_statement`), or null. */
export function credentialIn(text: string): string | null {
  const secret = findSecret(text);
  if (secret) return secret.kind;
  return CREDENTIAL_WORDS.test(text) ? 'credential_statement' : null;
}

const TRANSIENT =
  /\b(?:right now|at the moment|for now|for this (?:task|session|conversation|chat)|in this (?:session|conversation|chat)|temporar(?:y|ily)|today|tonight|in a (?:minute|moment))\b/i;
const REASONING = /<\/?think(?:ing)?>|^\s*(?:let me think|thinking:|my reasoning)/i;

/** Why a statement must not become a memory at all, or null (plan Milestone 9 "never automatically store"). */
export function unrememberable(text: string): { code: string; message: string } | null {
  const credential = credentialIn(text);
  if (credential)
    return {
      code: 'credential',
      message: `credentials and tokens are never stored as memories (the statement looks like one: ${credential})`,
    };
  if (REASONING.test(text)) return { code: 'private_reasoning', message: 'private reasoning is never stored' };
  if (TRANSIENT.test(text))
    return {
      code: 'transient',
      message: 'transient task details are not long-term memories (the statement says it holds only for now)',
    };
  return null;
}

/** The injection patterns a memory's text trips (skills' deterministic scanner), empty when clean. */
export function injectionIn(subject: string, statement: string): string[] {
  return scanForInjection(`${subject}\n${statement}`);
}

/** A validation problem of a free-text field (subject or statement), or null. */
export function textProblem(field: 'statement' | 'subject', value: unknown, max: number): string | null {
  if (typeof value !== 'string') return `${field} must be a string`;
  if (value.trim() === '') return `${field} must not be empty`;
  if (value.length > max) return `${field} is ${value.length} characters; the limit is ${max}`;
  const unstorable = unstorableReason(value);
  return unstorable ? `${field} ${unstorable}` : null;
}

export function isScope(v: unknown): v is MemoryScope {
  return typeof v === 'string' && (MEMORY_SCOPES as readonly string[]).includes(v);
}

export function isSensitivity(v: unknown): v is MemorySensitivity {
  return typeof v === 'string' && (MEMORY_SENSITIVITIES as readonly string[]).includes(v);
}

export function isStatus(v: unknown): v is MemoryStatus {
  return typeof v === 'string' && (MEMORY_STATUSES as readonly string[]).includes(v);
}
