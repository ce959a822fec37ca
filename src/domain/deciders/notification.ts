import { ConflictError, ValidationError } from '../errors';
import { NOTIFICATION_KINDS } from '../notifications/triggers';
import { accept, event, refuse, type Actor, type Decider, type DecidedEvent, type Decision } from './decider';

/** What an external producer posted (issue 31 item 2): the recipient, the kind, its summary and links. */
export interface PostedNotification {
  readonly principalId: string;
  readonly kind: string;
  readonly summary: Readonly<Record<string, string>>;
  readonly links: Readonly<Record<string, string>>;
}

/**
 * `POST /v1/notifications` with an `Idempotency-Key`: one stream per (tenant, key), so the same key
 * twice names the same stream and the same notification. The stream id is derived by the caller
 * (a hash of tenant and key: the domain computes no hashes).
 */
export interface PostNotification {
  readonly kind: 'PostNotification';
  readonly actor: Actor;
  readonly idempotencyKey: string;
  readonly notification: PostedNotification;
}

/** The principal (and agent id) of a posted notification's own stream session: a system one. */
export const NOTIFICATION_STREAM_PRINCIPAL = 'system:notifications';

/** The stream's notification, once posted; null before. */
export interface NotificationStreamState {
  readonly posted: PostedNotification | null;
}

const MAX_FIELDS = 16;
const MAX_TITLE = 200;
const MAX_VALUE = 500;
const MAX_LINK = 2000;
const bad = (message: string, field: string) => new ValidationError(message, { field });

function stringMap(v: unknown, field: string, max: number): Record<string, string> | ValidationError {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return bad(`${field} must be an object`, field);
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_FIELDS) return bad(`${field} may have at most ${MAX_FIELDS} fields`, field);
  for (const [k, x] of entries) {
    if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(k))
      return bad(`${field}: a field name is 1 to 64 letters, digits or _ (starting with a letter)`, `${field}.${k}`);
    if (typeof x !== 'string' || x.length > max)
      return bad(`${field}.${k} must be a string of at most ${max} characters`, `${field}.${k}`);
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/** Checks a posted notification whole; the first problem is the refusal, naming its field. */
export function validatePostedNotification(p: PostedNotification): ValidationError | null {
  if (typeof p.principalId !== 'string' || !/^[\x21-\x7e\u00a0-\uffff]{1,200}$/.test(p.principalId))
    return bad('recipient must be a principal id (1 to 200 characters, no spaces)', 'recipient');
  if (!(NOTIFICATION_KINDS as readonly string[]).includes(p.kind))
    return bad(`kind must be one of: ${NOTIFICATION_KINDS.join(', ')}`, 'kind');
  const summary = stringMap(p.summary, 'summary', MAX_VALUE);
  if (summary instanceof ValidationError) return summary;
  const title = summary.title;
  if (title === undefined || title.trim() === '' || title.length > MAX_TITLE)
    return bad(`summary.title is required: 1 to ${MAX_TITLE} characters`, 'summary.title');
  const links = stringMap(p.links, 'links', MAX_LINK);
  if (links instanceof ValidationError) return links;
  for (const [k, href] of Object.entries(links))
    if (!/^(\/|https?:\/\/)\S+$/.test(href))
      return bad(`links.${k} must be an absolute path or an http(s) URL`, `links.${k}`);
  return null;
}

const sameJson = (a: unknown, b: unknown): boolean =>
  JSON.stringify(a, Object.keys(a as object).sort()) === JSON.stringify(b, Object.keys(b as object).sort());

function samePosted(a: PostedNotification, b: PostedNotification): boolean {
  return (
    a.principalId === b.principalId && a.kind === b.kind && sameJson(a.summary, b.summary) && sameJson(a.links, b.links)
  );
}

function decide(cmd: PostNotification, s: NotificationStreamState): Decision {
  const n = cmd.notification;
  const invalid = validatePostedNotification(n);
  if (invalid) return refuse(invalid);
  const posted: PostedNotification = {
    principalId: n.principalId,
    kind: n.kind,
    summary: { ...n.summary },
    links: { ...n.links },
  };
  if (s.posted !== null)
    return samePosted(s.posted, posted)
      ? accept()
      : refuse(
          new ConflictError('this Idempotency-Key was used for another notification', {
            field: 'idempotency_key',
          }),
        );
  return accept(event('notification.posted', { ...posted, idempotencyKey: cmd.idempotencyKey }, cmd.actor));
}

function evolve(s: NotificationStreamState, e: DecidedEvent): NotificationStreamState {
  if (e.type !== 'notification.posted') return s;
  const { principalId, kind, summary, links } = e.data;
  return { posted: { principalId, kind, summary, links } };
}

/**
 * An external producer's notification (issue 31 item 2, ADR 0036): validated whole, posted once per
 * idempotency key; the same key and body again decides nothing (the original stands), the same key
 * with another body is refused (409).
 */
export const notificationDecider: Decider<PostNotification, NotificationStreamState> = {
  initialState: () => ({ posted: null }),
  evolve,
  decide,
};
