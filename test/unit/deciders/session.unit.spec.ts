import { event } from '../../../src/domain/deciders/decider';
import { sessionDecider, type SessionCommand } from '../../../src/domain/deciders/session';
import { deciderSpec } from '../../support/decider-spec';
import { given, history, LIMITS, RUN, USER } from './fixtures';

const spec = deciderSpec(sessionDecider);
const SESSION = '00000000-0000-4000-8000-000000000001';
const created = event(
  'session.created',
  { agentId: 'demo', agentVersion: 1, principalId: 'alice', title: null, metadata: {} },
  USER,
);
const create: SessionCommand = {
  kind: 'CreateSession',
  actor: USER,
  agentId: 'demo',
  agentVersion: 1,
  principalId: 'alice',
  title: null,
  metadata: {},
};
const del: SessionCommand = { kind: 'DeleteSession', sessionId: SESSION, actor: USER, reason: null };
const submit: SessionCommand = {
  kind: 'SubmitMessage',
  sessionId: SESSION,
  messageId: 'm1',
  content: [{ type: 'text', text: 'hello' }],
  run: {
    runId: RUN,
    actor: USER,
    agentId: 'demo',
    agentVersion: 1,
    principalId: 'alice',
    modelPolicy: 'default',
    limits: LIMITS,
    priority: 100,
    idempotencyKey: 'k',
    requestHash: 'h',
    scopes: ['tools.use'],
  },
};

describe('session decider', () => {
  it('creates a session once', () => {
    spec.given([]).when(create).then([created]);
    spec
      .given(given([created]))
      .when(create)
      .thenRefuses('invalid_state_transition');
  });

  it('creates a session with its first message: the create followed by what a submit on it decides (ADR 0053)', () => {
    const { run, messageId, content } = submit;
    const withMessage: SessionCommand = { ...create, message: { sessionId: SESSION, messageId, content, run } };
    const asSubmit = spec.given(given([created])).when(submit).decision;
    if (asSubmit.kind !== 'events') throw new Error('the submit was refused');
    spec
      .given([])
      .when(withMessage)
      .then([created, ...asSubmit.events]);
    expect(asSubmit.events.map((e) => e.type)).toEqual(['session.title.changed', 'user.message.created', 'run.queued']);
    spec
      .given(given([created]))
      .when(withMessage)
      .thenRefuses('invalid_state_transition');
  });

  it('a submitted message starts one queued run (run == turn); the first one titles an untitled session', () => {
    spec
      .given(given([created]))
      .when(submit)
      .then([
        event('session.title.changed', { title: 'hello', source: 'first_message' }, USER),
        event(
          'user.message.created',
          { messageId: 'm1', content: [{ type: 'text', text: 'hello' }] },
          { runId: RUN, ...USER },
        ),
        event(
          'run.queued',
          {
            agentId: 'demo',
            agentVersion: 1,
            principalId: 'alice',
            modelPolicy: 'default',
            userMessageId: 'm1',
            limits: LIMITS,
            priority: 100,
            idempotencyKey: 'k',
            requestHash: 'h',
            scopes: ['tools.use'],
            queuedBehind: null,
            multitaskStrategy: null,
          },
          { runId: RUN, ...USER },
        ),
      ]);
  });

  it('refuses a message to a missing or deleted session', () => {
    spec.given([]).when(submit).thenRefuses('not_found');
    spec
      .given(given([created, event('session.deleted', { reason: null }, USER)]))
      .when(submit)
      .thenRefuses('not_found');
  });

  it('deletes an idle session; a repeated delete writes nothing', () => {
    spec
      .given(given([created]))
      .when(del)
      .then([event('session.deleted', { reason: null }, USER)]);
    spec
      .given(given([created, event('session.deleted', { reason: null }, USER)]))
      .when(del)
      .then([]);
    spec.given([]).when(del).thenRefuses('not_found');
  });

  it('refuses to delete while a run is not terminal, naming its status', () => {
    spec
      .given(given([created, ...history.waitingForUser()]))
      .when(del)
      .thenRefuses('invalid_state_transition', /has a waiting_for_user run/);
    spec
      .given(given([created, ...history.running()]))
      .when(del)
      .thenRefuses('invalid_state_transition', /has a running run/);
  });

  it('deletes once the run ended', () => {
    for (const h of [history.completed, history.failed, history.cancelled])
      spec
        .given(given([created, ...h()]))
        .when(del)
        .then([event('session.deleted', { reason: null }, USER)]);
  });

  const titled = event('session.title.changed', { title: 'Trip plans', source: 'user' }, USER);
  const rename = (title: string): SessionCommand => ({ kind: 'RenameSession', sessionId: SESSION, actor: USER, title });

  it('a titled session keeps its title when a message arrives', () => {
    const decision = sessionDecider.decide(
      submit,
      given([created, titled]).reduce(sessionDecider.evolve, sessionDecider.initialState()),
    );
    expect(decision.kind === 'events' && decision.events.map((e) => e.type)).toEqual([
      'user.message.created',
      'run.queued',
    ]);
  });

  it('derives the title from the first non-empty line, cut at a word boundary', () => {
    const long = `  \n  ${'word '.repeat(30)}\nsecond line`;
    const decision = sessionDecider.decide(
      { ...submit, content: [{ type: 'text', text: long }] },
      given([created]).reduce(sessionDecider.evolve, sessionDecider.initialState()),
    );
    const first = decision.kind === 'events' ? decision.events[0] : null;
    expect(first?.type).toBe('session.title.changed');
    const title = (first?.data as { title: string }).title;
    expect(title.length).toBeLessThanOrEqual(80);
    expect(title).toMatch(/^word( word)+…$/);
  });

  it('renames a live session (trimmed); the same title writes nothing', () => {
    spec
      .given(given([created]))
      .when(rename('  Trip plans '))
      .then([titled]);
    spec
      .given(given([created, titled]))
      .when(rename('Trip plans'))
      .then([]);
  });

  it('refuses an empty or overlong title, and a missing or deleted session', () => {
    spec
      .given(given([created]))
      .when(rename('   '))
      .thenRefuses('validation_error', /must not be empty/);
    spec
      .given(given([created]))
      .when(rename('x'.repeat(501)))
      .thenRefuses('validation_error', /501 characters; the limit is 500/);
    spec.given([]).when(rename('x')).thenRefuses('not_found');
    spec
      .given(given([created, event('session.deleted', { reason: null }, USER)]))
      .when(rename('x'))
      .thenRefuses('not_found');
  });
});

describe('session decider: fork (issue 33)', () => {
  const PARENT = '00000000-0000-4000-8000-0000000000aa';
  const base = {
    kind: 'ForkSession' as const,
    actor: USER,
    agentId: 'demo',
    agentVersion: 1,
    principalId: 'alice',
    title: 'Trip (fork)',
    metadata: { forked_from: PARENT },
  };
  const point = (atSequence: number, eventType = 'assistant.message.completed') => ({
    sessionId: PARENT,
    lastSequence: 40,
    atSequence,
    eventType,
    messageId: eventType === 'user.message.created' ? 'm-old' : null,
  });
  const forked = (parentSequence: number, atSequence: number, replacedMessageId: string | null) =>
    event(
      'session.forked',
      {
        agentId: 'demo',
        agentVersion: 1,
        principalId: 'alice',
        title: 'Trip (fork)',
        metadata: { forked_from: PARENT },
        parentSessionId: PARENT,
        parentSequence,
        atSequence,
        replacedMessageId,
      },
      USER,
    );
  const { kind: _kind, sessionId: _session, ...resend } = submit;

  it('forks at a sequence: one session.forked whose history ends there', () => {
    spec
      .given([])
      .when({ ...base, parent: point(12), message: null })
      .then([forked(12, 12, null)]);
  });

  it('edit and resend: the prefix ends before the replaced message, and the new message runs at once', () => {
    const d = spec
      .given([])
      .when({ ...base, parent: point(13, 'user.message.created'), message: { ...resend, sessionId: SESSION } });
    d.then([
      forked(12, 13, 'm-old'),
      event(
        'user.message.created',
        { messageId: 'm1', content: [{ type: 'text', text: 'hello' }] },
        { runId: RUN, ...USER },
      ),
      expect.objectContaining({ type: 'run.queued', runId: RUN }) as never,
    ]);
  });

  it('refuses a sequence beyond the parent’s end (not found), a replacement at a non-user event, and an existing session', () => {
    spec
      .given([])
      .when({ ...base, parent: point(41), message: null })
      .thenRefuses('not_found', /has no sequence 41 \(its log ends at 40\)/);
    spec
      .given([])
      .when({ ...base, parent: point(0), message: null })
      .thenRefuses('not_found');
    spec
      .given([])
      .when({ ...base, parent: point(12), message: { ...resend, sessionId: SESSION } })
      .thenRefuses('validation_error', /a replacement message needs the sequence of a user message/);
    spec
      .given(given([created]))
      .when({ ...base, parent: point(12), message: null })
      .thenRefuses('invalid_state_transition');
  });
});
