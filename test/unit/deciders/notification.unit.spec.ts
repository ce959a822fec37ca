import { event } from '../../../src/domain/deciders/decider';
import { notificationDecider, type PostNotification } from '../../../src/domain/deciders/notification';
import { deciderSpec } from '../../support/decider-spec';
import { given } from './fixtures';

/** Issue 31 item 2: an external producer's notification, posted once per idempotency key, validated whole. */
const spec = deciderSpec(notificationDecider);
const ACTOR = { actorType: 'user' as const, actorId: 'ops-bot' };
const notification = {
  principalId: 'alice',
  kind: 'external.notice',
  summary: { title: 'The nightly export finished', rows: '1200' },
  links: { report: '/v1/artifacts/123', docs: 'https://example.com/export' },
};
const post = (over: Partial<PostNotification['notification']> = {}): PostNotification => ({
  kind: 'PostNotification',
  actor: ACTOR,
  idempotencyKey: 'export-2026-12-03',
  notification: { ...notification, ...over },
});
const posted = event('notification.posted', { ...notification, idempotencyKey: 'export-2026-12-03' }, ACTOR);

describe('notification decider', () => {
  it('posts a valid notification once; the same key and body again decides nothing', () => {
    spec.given([]).when(post()).then([posted]);
    spec
      .given(given([posted]))
      .when(post())
      .then([]);
    // Field order is not a different body.
    spec
      .given(given([posted]))
      .when(post({ summary: { rows: '1200', title: 'The nightly export finished' } }))
      .then([]);
  });

  it('refuses the same key with another body (409 naming the key)', () => {
    const d = spec.given(given([posted])).when(post({ summary: { title: 'Something else' } }));
    d.thenRefuses('conflict', /Idempotency-Key was used for another notification/);
  });

  it.each([
    [{ principalId: '' }, 'recipient'],
    [{ principalId: 'has space' }, 'recipient'],
    [{ kind: 'run.completed.elsewhere' }, 'kind'],
    [{ summary: {} }, 'summary.title'],
    [{ summary: { title: ' ' } }, 'summary.title'],
    [{ summary: { title: 'x'.repeat(201) } }, 'summary.title'],
    [{ summary: { title: 'ok', '1bad': 'x' } }, 'summary.1bad'],
    [{ summary: { title: 'ok', n: 5 as unknown as string } }, 'summary.n'],
    [{ summary: [] as unknown as Record<string, string> }, 'summary'],
    [{ links: { x: 'javascript:alert(1)' } }, 'links.x'],
    [{ links: { x: 'ftp://example.com/a' } }, 'links.x'],
    [{ summary: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`f${i}`, 'v'])) }, 'summary'],
  ])('refuses %j, naming %s, and writes nothing', (over, field) => {
    const d = spec.given([]).when(post(over));
    d.thenRefuses('validation_error');
    if (d.decision.kind === 'refused') expect(d.decision.refusal.details).toMatchObject({ field });
  });
});
