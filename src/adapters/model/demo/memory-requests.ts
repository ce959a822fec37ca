import type { ConversationItem, ToolResultItem } from '../../../domain/conversation/items';
import { textOf } from '../../../domain/conversation/items';
import { subjectKey } from '../../../domain/memory/memory-record';
import { MEMORY_SECTION_HEADING } from '../../../domain/memory/render';

/**
 * The demo model's long-term memory phrasings (issue 30), anchored at the start of the message:
 *   "remember that <fact>"                  -> memory.remember {statement}
 *   "what do you remember about <subject>?" -> memory.recall {query}
 *   "forget <subject>"                      -> memory.forget {subject} (the policy asks for approval)
 *   "what is my <x> [called]?"              -> answered from the session's memory snapshot, citing the
 *                                              memory id; memory.recall when the snapshot has none
 * and it reads the snapshot for "what time is it?" without a zone: a remembered time zone is used.
 */
export type MemoryRule = 'remember' | 'recall' | 'forget' | 'memory';

export type MemoryDecision =
  | {
      readonly kind: 'tool_call';
      readonly rule: MemoryRule;
      readonly name: string;
      readonly arguments: Record<string, unknown>;
    }
  | { readonly kind: 'text'; readonly rule: MemoryRule; readonly text: string };

type MemoryRequest =
  | { readonly kind: 'remember'; readonly statement: string }
  | { readonly kind: 'recall'; readonly subject: string }
  | { readonly kind: 'forget'; readonly subject: string }
  | { readonly kind: 'ask'; readonly subject: string };

const strip = (s: string) =>
  s
    .trim()
    .replace(/[.!?]+$/, '')
    .trim();

export function parseMemoryRequest(message: string): MemoryRequest | null {
  const m = message.trim();
  let r: RegExpExecArray | null;
  if ((r = /^(?:please\s+)?remember(?:\s+that|:)\s+(.+)$/is.exec(m)))
    return { kind: 'remember', statement: strip(r[1]) };
  if ((r = /^what\s+do\s+you\s+(?:remember|know)\s+about\s+(.+)$/is.exec(m)))
    return { kind: 'recall', subject: strip(r[1]) };
  // "forget it, …" / "forget that" alone are a change of mind, not something to erase.
  if ((r = /^(?:please\s+)?forget\s+(?:about\s+|that\s+)?(?!(?:it|that|this)\b)(.+)$/is.exec(m)))
    return { kind: 'forget', subject: strip(r[1]) };
  if ((r = /^what(?:'s|\u2019s|\s+is|\s+are)\s+(?:my|our)\s+(.+?)(?:\s+called|\s+named)?\s*\??$/i.exec(m)))
    return { kind: 'ask', subject: strip(r[1]) };
  return null;
}

/** One memory of the snapshot section: its id, subject and statement. */
interface SnapshotLine {
  readonly id: string;
  readonly subject: string;
  readonly statement: string;
}

/** The memories the session's snapshot shows (blocked ones are not lines of this shape). */
export function snapshotLines(conversation: readonly ConversationItem[]): SnapshotLine[] {
  const section = conversation.find((i) => i.kind === 'user' && textOf(i.content).startsWith(MEMORY_SECTION_HEADING));
  if (!section || section.kind !== 'user') return [];
  return textOf(section.content)
    .split('\n')
    .flatMap((l) => {
      const r = /^- \[memory ([0-9a-f-]{36})\](?: \([^)]*\))? (.*?): (.*)$/.exec(l);
      return r ? [{ id: r[1], subject: r[2], statement: r[3] }] : [];
    });
}

/** A remembered IANA time zone ("my time zone is Europe/Paris"), or undefined. */
export function rememberedTimeZone(conversation: readonly ConversationItem[]): string | undefined {
  for (const l of snapshotLines(conversation)) {
    const r = /time\s*zone\b.*?\b([A-Z][A-Za-z_]+(?:\/[A-Za-z0-9_+-]+)+|UTC)\b/.exec(l.statement);
    if (r) return r[1];
  }
  return undefined;
}

/** "my team is called X" -> "Your team is called X." */
function toUser(statement: string): string {
  const s = statement
    .replace(/^my\b/i, 'your')
    .replace(/^i am\b/i, 'you are')
    .replace(/^i\b/i, 'you');
  const t = s.charAt(0).toUpperCase() + s.slice(1);
  return /[.!?]$/.test(t) ? t : `${t}.`;
}

const field = (o: unknown, k: string): string => {
  const v = typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[k] : undefined;
  return typeof v === 'string' || typeof v === 'number' ? String(v) : '?';
};

function errorOf(r: ToolResultItem): { code: string; message: string } {
  const e = (r.output as { error?: { code?: string; message?: string } }).error;
  return { code: e?.code ?? '', message: e?.message ?? 'unknown error' };
}

/** The demo's memory decision for the latest user message, or null when it is not a memory phrasing. */
export function memoryDecision(
  message: string,
  conversation: readonly ConversationItem[],
  offered: ReadonlySet<string>,
  after: readonly ConversationItem[],
): MemoryDecision | null {
  const req = parseMemoryRequest(message);
  if (req === null) return null;
  const step = (
    rule: MemoryRule,
    name: string,
    args: Record<string, unknown>,
    answer: (r: ToolResultItem) => string,
  ) => {
    const result = after.filter((i): i is ToolResultItem => i.kind === 'tool_result' && i.name === name).at(-1);
    if (result) return { kind: 'text' as const, rule, text: answer(result) };
    if (!offered.has(name))
      return {
        kind: 'text' as const,
        rule,
        text: `I would need the ${name} tool for that, but it is not available to me.`,
      };
    return { kind: 'tool_call' as const, rule, name, arguments: args };
  };
  switch (req.kind) {
    case 'remember':
      return step('remember', 'memory.remember', { statement: req.statement }, answerRemember);
    case 'recall':
      return step('recall', 'memory.recall', { query: req.subject }, (r) => answerRecall(r, req.subject));
    case 'forget':
      return step('forget', 'memory.forget', { subject: req.subject }, (r) => answerForget(r, req.subject));
    case 'ask': {
      const key = subjectKey(req.subject);
      const known = snapshotLines(conversation).find((l) => subjectKey(l.subject) === key);
      if (known) return { kind: 'text', rule: 'memory', text: `${toUser(known.statement)} (memory ${known.id})` };
      return step('memory', 'memory.recall', { query: req.subject }, (r) => {
        const first = ((r.output as { items?: { statement: string; memory_id: string }[] }).items ?? [])[0];
        return first
          ? `${toUser(first.statement)} (memory ${first.memory_id})`
          : `I don't know your ${req.subject} yet; tell me and I will remember it.`;
      });
    }
  }
}

function answerRemember(r: ToolResultItem): string {
  if (r.isError) return `I can't remember that: ${errorOf(r).message}`;
  const o = r.output;
  const id = field(o, 'memory_id');
  switch (field(o, 'outcome')) {
    case 'reinforced':
      return `I already knew that; noted again (memory ${id}).`;
    case 'superseded':
      return `Updated: ${field(o, 'statement')} (memory ${id}). What I remembered before is kept, marked superseded.`;
    case 'conflicting':
      return `That conflicts with what I remember. ${field(o, 'question')}`;
    case 'tentative':
      return `Noted as tentative (memory ${id}).`;
    default:
      return `I'll remember that ${field(o, 'statement')} (memory ${id}).`;
  }
}

function answerRecall(r: ToolResultItem, subject: string): string {
  if (r.isError) return `I could not look that up: ${errorOf(r).message}`;
  const items = (r.output as { items?: { statement: string; memory_id: string; status: string }[] }).items ?? [];
  if (items.length === 0) return `I don't remember anything about ${subject}.`;
  const listed = items.map(
    (i) => `${i.statement} (memory ${i.memory_id}${i.status === 'active' ? '' : `, ${i.status}`})`,
  );
  return `I remember: ${listed.join('; ')}.`;
}

function answerForget(r: ToolResultItem, subject: string): string {
  if (r.isError) {
    const { code, message } = errorOf(r);
    if (code === 'approval_denied') return `I did not forget ${subject}: the request was denied.`;
    if (code === 'approval_expired') return `I did not forget ${subject}: the approval expired.`;
    return `I could not forget ${subject}: ${message}`;
  }
  const n = Number(field(r.output, 'forgotten'));
  if (!n) return `I had nothing to forget about ${subject}.`;
  return `Forgot ${n} ${n === 1 ? 'memory' : 'memories'} about ${subject}.`;
}
