import { ValidationError } from '../errors';
import { NOTIFICATION_KINDS, type NotificationKind } from './triggers';

/**
 * Where a kind of notification goes for one principal (issue 31 item 4): the inbox only, webhooks
 * only, both (the default), or nowhere. The notification row exists either way (it is a projection
 * of the log); preferences decide what the inbox shows and what is fanned out to webhooks.
 */
export const DELIVERY_CHANNELS = ['inbox', 'webhook', 'both', 'none'] as const;
export type DeliveryChannel = (typeof DELIVERY_CHANNELS)[number];

/**
 * `none` (the default): summaries are content-free. `full`: the inbox and webhook bodies also carry
 * the content the notification is about (the action summary and arguments, the question, the
 * failure message), read from the source rows at read or delivery time, never stored with it.
 */
export const CONTENT_LEVELS = ['none', 'full'] as const;
export type ContentLevel = (typeof CONTENT_LEVELS)[number];

/** Webhook deliveries wait while the principal's local time is in [start, end) (wrapping midnight when start > end). */
export interface QuietHours {
  /** `HH:MM`, 24-hour, local time in `zone`. */
  readonly start: string;
  readonly end: string;
  /** An IANA time zone, e.g. `Europe/Berlin`. */
  readonly zone: string;
}

export interface NotificationPreferences {
  /** Every kind, with its channel (kinds the principal did not set are `both`). */
  readonly kinds: Readonly<Record<NotificationKind, DeliveryChannel>>;
  readonly content: ContentLevel;
  readonly quietHours: QuietHours | null;
}

export const DEFAULT_CHANNEL: DeliveryChannel = 'both';

export function defaultPreferences(): NotificationPreferences {
  return {
    kinds: Object.fromEntries(NOTIFICATION_KINDS.map((k) => [k, DEFAULT_CHANNEL])) as Record<
      NotificationKind,
      DeliveryChannel
    >,
    content: 'none',
    quietHours: null,
  };
}

const TIME = /^([01]\d|2[0-3]):([0-5]\d)$/;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function bad(message: string, field: string, more: Record<string, unknown> = {}): never {
  throw new ValidationError(message, { field, ...more });
}

function parseKinds(raw: unknown): Record<NotificationKind, DeliveryChannel> {
  const kinds = { ...defaultPreferences().kinds };
  if (raw === undefined || raw === null) return kinds;
  if (!isRecord(raw)) bad('kinds must be an object of kind → channel', 'kinds');
  for (const [kind, channel] of Object.entries(raw)) {
    if (!(NOTIFICATION_KINDS as readonly string[]).includes(kind))
      bad(`kinds: unknown kind ${kind}; one of ${NOTIFICATION_KINDS.join(', ')}`, `kinds.${kind}`);
    if (!(DELIVERY_CHANNELS as readonly unknown[]).includes(channel))
      bad(`kinds.${kind} must be one of ${DELIVERY_CHANNELS.join(', ')}`, `kinds.${kind}`);
    kinds[kind as NotificationKind] = channel as DeliveryChannel;
  }
  return kinds;
}

function parseQuietHours(raw: unknown, isZone: (zone: string) => boolean): QuietHours | null {
  if (raw === undefined || raw === null) return null;
  if (!isRecord(raw)) bad('quiet_hours must be an object {start, end, zone} or null', 'quiet_hours');
  const { start, end, zone } = raw;
  const extra = Object.keys(raw).filter((k) => !['start', 'end', 'zone'].includes(k));
  if (extra.length > 0) bad(`quiet_hours has unknown fields: ${extra.join(', ')}`, 'quiet_hours');
  for (const [name, v] of [
    ['start', start],
    ['end', end],
  ] as const)
    if (typeof v !== 'string' || !TIME.test(v))
      bad(`quiet_hours.${name} must be HH:MM (24-hour)`, `quiet_hours.${name}`);
  if (start === end) bad('quiet_hours.start and end must differ', 'quiet_hours.end');
  if (typeof zone !== 'string' || !isZone(zone))
    bad('quiet_hours.zone must be an IANA time zone such as Europe/Berlin', 'quiet_hours.zone', {
      zone: typeof zone === 'string' ? zone : null,
    });
  return { start: start as string, end: end as string, zone };
}

/**
 * A whole preference document from its wire shape (`{kinds?, content?, quiet_hours?}`), or a
 * ValidationError naming the field; `isZone` says whether a zone name is a known IANA zone.
 */
export function parsePreferences(raw: unknown, isZone: (zone: string) => boolean): NotificationPreferences {
  if (!isRecord(raw)) bad('preferences must be a JSON object', '(body)');
  const unknown = Object.keys(raw).filter((k) => !['kinds', 'content', 'quiet_hours'].includes(k));
  if (unknown.length > 0) bad(`unknown fields: ${unknown.join(', ')}`, unknown[0]);
  const content = raw.content ?? 'none';
  if (!(CONTENT_LEVELS as readonly unknown[]).includes(content))
    bad(`content must be one of ${CONTENT_LEVELS.join(', ')}`, 'content');
  return {
    kinds: parseKinds(raw.kinds),
    content: content as ContentLevel,
    quietHours: parseQuietHours(raw.quiet_hours, isZone),
  };
}

/** Whether the inbox shows a kind, and whether webhooks receive it. */
export const showsInInbox = (c: DeliveryChannel) => c === 'inbox' || c === 'both';
export const sendsToWebhooks = (c: DeliveryChannel) => c === 'webhook' || c === 'both';
