import type { ConversationItem, ToolResultItem } from '../../../domain/conversation/items';

/**
 * The demo model's schedule phrasings (docs/schedules.md "Conversational tools"), anchored at the
 * start of the message:
 *   "every day at 08:00 Europe/Paris say good morning" -> schedule.create {daily 08:00 Europe/Paris}
 *   "every monday at 09:30 UTC <message>"              -> schedule.create {weekly}
 *   "in 2 minutes remind me to stretch"                -> schedule.create {once, in_seconds: 120}
 *   "list my schedules"                                -> schedule.list
 *   "pause|resume|cancel|delete schedule <id>"         -> schedule.list, then schedule.<verb> at the listed revision
 * Pure: the same conversation always gets the same decision.
 */
export type ScheduleAsk =
  | { readonly kind: 'create'; readonly message: string; readonly cadence: Record<string, unknown> }
  | { readonly kind: 'list' }
  | { readonly kind: 'lifecycle'; readonly verb: 'pause' | 'resume' | 'cancel'; readonly id: string };

export type ScheduleStep =
  | { readonly kind: 'tool_call'; readonly name: string; readonly arguments: Record<string, unknown> }
  | { readonly kind: 'text'; readonly text: string };

const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const UNIT_SECONDS: Readonly<Record<string, number>> = { second: 1, minute: 60, hour: 3600, day: 86_400 };
const ZONE = '([A-Za-z]+(?:\\/[A-Za-z0-9_+-]+)+|UTC)';

function hhmm(t: string): string {
  const [h, m] = t.split(':');
  return `${h.padStart(2, '0')}:${m}`;
}

function reminder(text: string): string {
  const m = /^remind me to\s+(.+)$/i.exec(text);
  return m ? `Reminder: ${m[1]}` : text;
}

export function parseScheduleAsk(message: string): ScheduleAsk | null {
  const m = message.trim().replace(/[.!]+$/, '');
  let r: RegExpExecArray | null;
  if ((r = new RegExp(`^every day at (\\d{1,2}:\\d{2})(?:\\s+${ZONE})?\\s+(.+)$`, 'is').exec(m)))
    return {
      kind: 'create',
      message: reminder(r[3]),
      cadence: { kind: 'daily', time: hhmm(r[1]), time_zone: r[2] ?? 'UTC' },
    };
  if ((r = new RegExp(`^every (${DAYS.join('|')}) at (\\d{1,2}:\\d{2})(?:\\s+${ZONE})?\\s+(.+)$`, 'is').exec(m))) {
    const day = r[1].toLowerCase().slice(0, 3);
    const cadence = { kind: 'weekly', days: [day], time: hhmm(r[2]), time_zone: r[3] ?? 'UTC' };
    return { kind: 'create', message: reminder(r[4]), cadence };
  }
  if ((r = /^in (\d+) (second|minute|hour|day)s? (.+)$/is.exec(m)))
    return {
      kind: 'create',
      message: reminder(r[3]),
      cadence: { kind: 'once', in_seconds: Number(r[1]) * UNIT_SECONDS[r[2].toLowerCase()] },
    };
  if (/^(?:list|show)(?: me)?(?: my| the)? schedules\??$/i.test(m)) return { kind: 'list' };
  if (
    (r = /^(pause|resume|cancel|delete) schedule ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i.exec(
      m,
    ))
  )
    return {
      kind: 'lifecycle',
      verb: r[1].toLowerCase() === 'delete' ? 'cancel' : (r[1].toLowerCase() as 'pause'),
      id: r[2],
    };
  return null;
}

function resultOf(after: readonly ConversationItem[], tool: string): ToolResultItem | undefined {
  return after.filter((i): i is ToolResultItem => i.kind === 'tool_result' && i.name === tool).at(-1);
}

function field(o: unknown, name: string): string {
  const v = typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[name] : undefined;
  return typeof v === 'string' || typeof v === 'number' ? String(v) : '?';
}

function refusal(r: ToolResultItem, what: string): string {
  const e = typeof r.output === 'object' && r.output !== null ? (r.output as Record<string, unknown>).error : null;
  const code = field(e, 'code');
  if (code === 'approval_denied') return `I did not ${what}: the request was denied.`;
  if (code === 'approval_expired') return `I did not ${what}: the approval expired.`;
  return `I could not ${what}: ${field(e, 'message')}`;
}

function describe(s: unknown): string {
  const next = field(s, 'next_fire_at_local');
  return `${field(s, 'schedule_id')} "${field(s, 'title')}" (${field(s, 'status')}, revision ${field(s, 'revision')}, ${field(s, 'cadence')}${next === '?' ? '' : `, next ${next}`})`;
}

/** The next step for a schedule ask: a tool call, or the answer once its result is in. */
export function scheduleStep(ask: ScheduleAsk, after: readonly ConversationItem[]): ScheduleStep {
  if (ask.kind === 'create') {
    const r = resultOf(after, 'schedule.create');
    if (!r)
      return { kind: 'tool_call', name: 'schedule.create', arguments: { message: ask.message, cadence: ask.cadence } };
    if (r.isError) return { kind: 'text', text: refusal(r, 'create the schedule') };
    return { kind: 'text', text: `Scheduled ${describe(r.output)}.` };
  }
  const listed = resultOf(after, 'schedule.list');
  if (!listed) return { kind: 'tool_call', name: 'schedule.list', arguments: {} };
  if (listed.isError) return { kind: 'text', text: refusal(listed, 'list your schedules') };
  const schedules = ((listed.output as { schedules?: unknown[] }).schedules ?? []) as Record<string, unknown>[];
  if (ask.kind === 'list')
    return {
      kind: 'text',
      text:
        schedules.length === 0 ? 'You have no schedules.' : `Your schedules: ${schedules.map(describe).join('; ')}.`,
    };
  const target = schedules.find((s) => s.schedule_id === ask.id);
  if (!target) return { kind: 'text', text: `I found no schedule ${ask.id} among yours.` };
  const tool = `schedule.${ask.verb}`;
  const done = resultOf(after, tool);
  if (!done)
    return { kind: 'tool_call', name: tool, arguments: { schedule_id: ask.id, expected_revision: target.revision } };
  if (done.isError) return { kind: 'text', text: refusal(done, `${ask.verb} the schedule`) };
  const verb = ask.verb === 'pause' ? 'Paused' : ask.verb === 'resume' ? 'Resumed' : 'Cancelled';
  return { kind: 'text', text: `${verb} schedule ${describe(done.output)}.` };
}
