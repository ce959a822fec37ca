import type { StoredEvent } from '../events/payloads';
import { notificationIdOf } from './notification-id';

/**
 * Notification kinds (ADR 0036). `approval.requested` is named by issue 31; the others follow its
 * "<subject>.<what happened>" shape.
 */
export const NOTIFICATION_KINDS = [
  'approval.requested',
  'approval.expiring',
  'approval.expired',
  'run.waiting_for_user',
  'run.failed',
  'tool.uncertain',
  'schedule.occurrence.failed',
  /** A scheduled occurrence's run completed (issue 31): its result is waiting. */
  'schedule.occurrence.completed',
  /** Posted by an external producer (`POST /v1/notifications`) about something outside this platform. */
  'external.notice',
] as const;
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/**
 * What an event triggers, content-free: the kind, which session/run/subject, links, and a summary
 * that says what kind of thing is waiting and never the message text, the question, the tool's
 * arguments or its action summary (those can hold anything the user or the model wrote).
 */
export interface NotificationTrigger {
  readonly id: string;
  readonly dedupeKey: string;
  readonly kind: NotificationKind;
  /** The recipient; null means the session's owner (the events of a run do not all name the principal). */
  readonly principalId: string | null;
  readonly subjectId: string;
  readonly summary: { readonly title: string; readonly [k: string]: string | null };
  readonly links: Readonly<Record<string, string>>;
}

function trigger(
  e: StoredEvent,
  kind: NotificationKind,
  subjectId: string,
  principalId: string | null,
  title: string,
  extra: Record<string, string | null> = {},
  links: Record<string, string> = {},
): NotificationTrigger {
  const dedupeKey = `${kind}:${subjectId}`;
  return {
    id: notificationIdOf(dedupeKey),
    dedupeKey,
    kind,
    principalId,
    subjectId,
    summary: { title, ...extra },
    links: {
      session: `/v1/sessions/${e.sessionId}`,
      ...(e.runId ? { run: `/v1/runs/${e.runId}` } : {}),
      ...links,
    },
  };
}

/** An external producer's notification (issue 31 item 2): its kind, recipient, summary and links as posted. */
function posted(e: StoredEvent<'notification.posted'>): NotificationTrigger | null {
  const kind = e.data.kind as NotificationKind;
  if (!(NOTIFICATION_KINDS as readonly string[]).includes(kind)) return null;
  const dedupeKey = `posted:${e.sessionId}`;
  const { title, ...extra } = e.data.summary;
  return {
    id: notificationIdOf(dedupeKey),
    dedupeKey,
    kind,
    principalId: e.data.principalId,
    subjectId: e.sessionId,
    summary: { ...extra, title: title ?? '' },
    links: { ...e.data.links },
  };
}

/** The notification an event triggers, or null. Pure: the same event always triggers the same one. */
export function notificationTriggeredBy(e: StoredEvent): NotificationTrigger | null {
  switch (e.type) {
    case 'approval.requested': {
      const review = e.data.actionKind === 'uncertain_review';
      return trigger(
        e,
        review ? 'tool.uncertain' : 'approval.requested',
        e.data.approvalId,
        e.data.principalId,
        review ? 'A tool call with an uncertain outcome needs review' : 'An action is waiting for your approval',
        { toolName: e.data.toolName, risk: e.data.risk, expiresAt: e.data.expiresAt },
        { approval: `/v1/approvals/${e.data.approvalId}` },
      );
    }
    case 'approval.expiring': {
      // Minutes left when the warning was given (rounded up: a 10-minute lead reads "10 minutes").
      const minutes = Math.max(1, Math.ceil((Date.parse(e.data.expiresAt) - Date.parse(e.createdAt)) / 60_000));
      return trigger(
        e,
        'approval.expiring',
        e.data.approvalId,
        e.data.principalId,
        `An approval expires in ${minutes} minute${minutes === 1 ? '' : 's'}`,
        { toolName: e.data.toolName, expiresAt: e.data.expiresAt },
        { approval: `/v1/approvals/${e.data.approvalId}` },
      );
    }
    case 'approval.resolved':
      if (e.data.decision !== 'expired') return null;
      return trigger(
        e,
        'approval.expired',
        e.data.approvalId,
        null,
        'An approval expired unanswered',
        {},
        {
          approval: `/v1/approvals/${e.data.approvalId}`,
        },
      );
    case 'run.waiting_for_user':
      return trigger(e, 'run.waiting_for_user', e.data.questionId, null, 'The agent asked you a question');
    case 'run.completed':
      // Only a scheduled run's completion notifies (v2 names its schedule; nobody else is away
      // waiting for an answer they asked for). The answer itself is content: never in the summary.
      if (!e.data.scheduleId) return null;
      return trigger(
        e,
        'schedule.occurrence.completed',
        e.runId ?? e.sessionId,
        null,
        'A scheduled run completed',
        {},
        { schedule: `/v1/schedules/${e.data.scheduleId}` },
      );
    case 'run.failed':
      // A scheduled run's failure stays `run.failed` (one kind for every failed run), saying it was scheduled.
      return e.data.scheduleId
        ? trigger(
            e,
            'run.failed',
            e.runId ?? e.sessionId,
            null,
            'A scheduled run failed',
            { reason: e.data.reason },
            { schedule: `/v1/schedules/${e.data.scheduleId}` },
          )
        : trigger(e, 'run.failed', e.runId ?? e.sessionId, null, 'A run failed', { reason: e.data.reason });
    case 'notification.posted':
      return posted(e);
    case 'schedule.occurrence.failed':
      // The schedule's stream belongs to a system principal: the recipient is the owner the event
      // names (v2); a v1 event named none, so it notifies nobody. The message is not content.
      if (e.data.principalId === null) return null;
      return trigger(
        e,
        'schedule.occurrence.failed',
        e.data.occurrenceId,
        e.data.principalId,
        'A scheduled run could not start',
        { reason: e.data.reason, nominalAt: e.data.nominalAt },
        { schedule: `/v1/schedules/${e.sessionId}` },
      );
    default:
      return null;
  }
}
