import { event } from '../../../src/domain/deciders/decider';
import { runDecider, runStateOf } from '../../../src/domain/deciders/run';
import { briefsOf, briefText, type Brief } from '../../../src/domain/delegation/brief';
import { carveLimits } from '../../../src/domain/delegation/carve';
import { decideJoin, type ChildOutcome, type JoinState } from '../../../src/domain/delegation/join';
import { childBatch } from '../../../src/domain/delegation/materialize';
import { planDelegation, type ChildAgent, type DelegatingParent } from '../../../src/domain/delegation/plan';
import { runProjection } from '../../../src/domain/projections/run-projection';
import { toRunRecord } from '../../../src/domain/projections/run-record';
import type { RunLimits } from '../../../src/domain/run/limits';
import { ZERO_USAGE, type RunUsage } from '../../../src/domain/run/usage';
import { deciderSpec, stored } from '../../support/decider-spec';
import { given, history, RUN, WORKER } from '../deciders/fixtures';

const NOW = Date.parse('2026-01-01T00:00:00.000Z');
const LIMITS: RunLimits = {
  maxSteps: 10,
  maxModelCalls: 11,
  maxToolCalls: 20,
  maxInputTokens: 10_000,
  maxOutputTokens: null,
  maxCost: '1.00',
  deadlineSeconds: 300,
};
const INV = '55555555-5555-4555-8555-555555555555';
const parent = (over: Partial<DelegatingParent['run']> = {}): DelegatingParent => ({
  run: {
    id: RUN,
    sessionId: '66666666-6666-4666-8666-666666666666',
    tenantId: 'local',
    principalId: 'alice',
    agentId: 'general',
    agentVersion: 4,
    modelPolicy: 'demo',
    parentRunId: null,
    limits: LIMITS,
    usage: { ...ZERO_USAGE, modelCalls: 1, toolCalls: 1, uncachedInputTokens: 2000, cost: '0.20' },
    stepCount: 1,
    deadlineAt: new Date(NOW + 120_000).toISOString(),
    priority: 10,
    ...over,
  },
  pinnedTools: ['math.calculate', 'system.current_time', 'delegate.run'],
  scopes: ['tools.use', 'runs.read'],
});
const brief = (over: Partial<Brief> = {}): Brief => ({
  objective: 'what is 17 times 23',
  successCondition: 'A concise, correct answer.',
  context: null,
  artifacts: [],
  tools: ['math.calculate'],
  limits: {},
  agentId: null,
  ...over,
});
const ids = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    sessionId: `aaaaaaaa-0000-4000-8000-00000000000${i}`,
    runId: `bbbbbbbb-0000-4000-8000-00000000000${i}`,
    messageId: `cccccccc-0000-4000-8000-00000000000${i}`,
  }));
const agents = new Map<string, ChildAgent>([['general', { id: 'general', version: 4, modelPolicy: 'demo' }]]);
const plan = (briefs: Brief[], p = parent(), maxFanOut = 4) =>
  planDelegation({ parent: p, briefs, maxFanOut, nowMs: NOW, ids: ids(briefs.length), agents });

describe('delegate.run briefs (ADR 0037)', () => {
  it('reads the tool arguments as briefs, limits in camel case, absent ones left out', () => {
    const [b] = briefsOf({
      briefs: [
        {
          objective: ' sum ',
          success_condition: 'ok',
          tools: [],
          limits: { max_model_calls: 2, deadline_seconds: 30 },
        },
      ],
    });
    expect(b).toEqual(
      brief({ objective: 'sum', successCondition: 'ok', tools: [], limits: { maxModelCalls: 2, deadlineSeconds: 30 } }),
    );
    expect(briefText(b).split('\n')[0]).toBe('sum');
  });

  it('plans one child per brief: the tool subset, the parent scopes, an equal share of the remainder, the parent deadline', () => {
    const r = plan([brief(), brief({ objective: 'what time is it', tools: ['system.current_time'] })]);
    if (!r.ok) throw new Error(r.message);
    expect(r.children).toHaveLength(2);
    const [a, b] = r.children;
    expect(a.tools).toEqual(['math.calculate']);
    expect(b.tools).toEqual(['system.current_time']);
    expect(a.scopes).toEqual(['tools.use', 'runs.read']);
    // 11 - 1 used - 1 kept for the parent's answer = 9, split in two.
    expect(a.limits.maxModelCalls).toBe(4);
    expect(a.limits.maxToolCalls).toBe(9);
    expect(a.limits.maxInputTokens).toBe(4000);
    expect(a.limits.maxOutputTokens).toBeNull();
    expect(a.limits.maxCost).toBe('0.4');
    expect(a.limits.maxSteps).toBe(9);
    expect(a.deadlineAt).toBe(new Date(NOW + 120_000).toISOString());
    expect(a.limits.deadlineSeconds).toBe(120);
  });

  it.each([
    ['a fan-out over the cap', () => plan([brief(), brief(), brief()], parent(), 2), /1 to 2 briefs; this call has 3/],
    [
      'an unknown tool in a subset',
      () => plan([brief({ tools: ['weather.lookup'] })]),
      /weather.lookup, which is not one of the parent's tools/,
    ],
    [
      'delegate.run in a subset',
      () => plan([brief({ tools: ['delegate.run'] })]),
      /delegate.run cannot be given to a child/,
    ],
    ['an empty objective', () => plan([brief({ objective: '' })]), /empty objective/],
    [
      'limits over the remainder',
      () => plan([brief({ limits: { maxModelCalls: 10 } })]),
      /asks for 10 model calls; the parent has 9 left/,
    ],
    [
      'own limits together over the remainder',
      () => plan([brief({ limits: { maxModelCalls: 5 } }), brief({ limits: { maxModelCalls: 5 } })]),
      /together/,
    ],
    ['a deadline past the parent’s', () => plan([brief({ limits: { deadlineSeconds: 500 } })]), /deadline/],
    [
      'a cost over the remainder',
      () => plan([brief({ limits: { maxCost: '0.9' } })]),
      /cost of 0.9; the parent has 0.8 left/,
    ],
    ['a child that delegates (depth 1)', () => plan([brief()], parent({ parentRunId: RUN })), /one level deep/],
    ['an unknown agent', () => plan([brief({ agentId: 'nobody' })]), /unknown agent nobody/],
  ])('refuses %s, planning nothing', (_what, run, message) => {
    const r = run();
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(message);
  });

  it('refuses a remainder too small to give each child a model call', () => {
    const r = carveLimits(
      [{}, {}],
      { limits: LIMITS, usage: { ...ZERO_USAGE, modelCalls: 9 }, stepCount: 9, deadlineAt: null },
      NOW,
    );
    expect(r).toEqual({ ok: false, message: expect.stringMatching(/too few to give 2 children 1 each/) as string });
  });

  it('materializes a child session: created, the brief as its message, queued with its origin', () => {
    const r = plan([brief()]);
    if (!r.ok) throw new Error(r.message);
    const b = childBatch(r.children[0], parent().run, INV);
    expect(b.events.map((e) => e.type)).toEqual([
      'session.created',
      'user.message.created',
      'run.queued',
      'run.delegated',
    ]);
    expect(b.sessionId).toBe(ids(1)[0].sessionId);
    const delegated = b.events[3] as ReturnType<typeof event<'run.delegated'>>;
    expect(delegated.data).toEqual({
      parentRunId: RUN,
      parentSessionId: parent().run.sessionId,
      invocationId: INV,
      briefIndex: 0,
      tools: ['math.calculate'],
      scopes: ['tools.use', 'runs.read'],
      deadlineAt: new Date(NOW + 120_000).toISOString(),
      parentTrace: null,
    });
    // The run projection records the origin, and the deadline the claim then keeps.
    const s = b.events.map((e, i) => stored(e, { sessionId: b.sessionId, sequence: i + 1 }));
    const row = s.reduce<Record<string, unknown> | undefined>((r0, e) => runProjection.evolve(r0, e), undefined)!;
    const rec = toRunRecord(row);
    expect(rec.parentRunId).toBe(RUN);
    expect(rec.delegation?.tools).toEqual(['math.calculate']);
    expect(rec.deadlineAt).toBe(new Date(NOW + 120_000).toISOString());
  });
});

describe('the run decider and projection for children (plan §27.6)', () => {
  const spec = deciderSpec(runDecider);
  const w = { runId: RUN, actorType: 'worker' as const };
  const waiting = () => [
    ...history.running(),
    event('run.waiting_for_children', { invocationId: INV, children: [{ runId: RUN, sessionId: RUN }] }, w),
  ];
  const usage: RunUsage = { ...ZERO_USAGE, modelCalls: 2, toolCalls: 1, outputTokens: 7, cost: '0.01' };

  it('suspends a running run for its children, and refuses it for one not running', () => {
    const cmd = {
      kind: 'SuspendForChildren' as const,
      runId: RUN,
      actor: WORKER,
      invocationId: INV,
      children: [{ runId: RUN, sessionId: RUN }],
    };
    spec
      .given(given(history.running()))
      .when(cmd)
      .then([event('run.waiting_for_children', { invocationId: INV, children: cmd.children }, w)]);
    spec.given(given(history.waitingForUser())).when(cmd).thenRefuses('invalid_state_transition');
  });

  it('joins a parent waiting for children once: children_joined then resumed; again it is a conflict', () => {
    const cmd = {
      kind: 'JoinChildren' as const,
      runId: RUN,
      actor: WORKER,
      invocationId: INV,
      children: [{ runId: RUN, status: 'completed' as const, usage }],
    };
    spec
      .given(given(waiting()))
      .when(cmd)
      .then([
        event('run.children_joined', { invocationId: INV, children: cmd.children }, w),
        event('run.resumed', { reason: 'children_joined' }, w),
      ]);
    spec
      .given(given([...waiting(), event('run.resumed', { reason: 'children_joined' }, w)]))
      .when(cmd)
      .thenRefuses('conflict');
  });

  it('adds the children’s usage to the parent’s and keeps its deadline across the join', () => {
    const deadline = '2026-01-01T00:05:00.000Z';
    const events = [
      ...history.queued(),
      event('run.claimed', { workerId: 'w1', leaseEpoch: 1, attempt: 1 }, w),
      event('run.started', { attempt: 1, deadlineAt: deadline, traceId: null, spanId: null }, w),
      event('run.waiting_for_children', { invocationId: INV, children: [{ runId: RUN, sessionId: RUN }] }, w),
      event(
        'run.children_joined',
        {
          invocationId: INV,
          children: [
            { runId: RUN, status: 'failed', usage },
            { runId: RUN, status: 'completed', usage },
          ],
        },
        w,
      ),
      event('run.resumed', { reason: 'children_joined' }, w),
    ];
    const row = given(events).reduce<Record<string, unknown> | undefined>(
      (r, e) => runProjection.evolve(r, e),
      undefined,
    )!;
    const rec = toRunRecord(row);
    expect(rec.status).toBe('queued');
    expect(rec.deadlineAt).toBe(deadline);
    expect(rec.usage).toEqual({ ...ZERO_USAGE, modelCalls: 4, toolCalls: 2, outputTokens: 14, cost: '0.02' });
  });
});

describe('the join (decideJoin)', () => {
  const child = (status: ChildOutcome['status'], i = 0): ChildOutcome => ({
    runId: `bbbbbbbb-0000-4000-8000-00000000000${i}`,
    sessionId: `aaaaaaaa-0000-4000-8000-00000000000${i}`,
    briefIndex: i,
    status,
    finalText: status === 'completed' ? 'The result is 391.' : null,
    failure:
      status === 'failed'
        ? { reason: 'max_steps_exceeded', message: 'too many steps', errorCode: 'budget_exceeded' }
        : null,
    usage: { ...ZERO_USAGE, modelCalls: 1 },
    artifactIds: [],
  });
  const parentState = (events = history.running()) =>
    runStateOf(
      toRunRecord(
        given(events).reduce<Record<string, unknown> | undefined>((r, e) => runProjection.evolve(r, e), undefined)!,
      ),
    );
  const waitingState = () =>
    parentState([
      ...history.running(),
      event(
        'run.waiting_for_children',
        { invocationId: INV, children: [{ runId: RUN, sessionId: RUN }] },
        { runId: RUN, actorType: 'worker' },
      ),
    ]);
  const state = (children: ChildOutcome[], parentRun = waitingState()): JoinState => ({
    parent: parentRun,
    invocationId: INV,
    invocation: { invocationId: INV, status: 'running' },
    children,
  });

  it('decides nothing while a child is active', () => {
    expect(decideJoin(state([child('completed', 0), child('running', 1)]), WORKER)).toEqual({
      kind: 'events',
      events: [],
    });
  });

  it('completes the invocation with one untrusted result per brief, a failed child as that brief’s error, then joins', () => {
    const d = decideJoin(state([child('failed', 1), child('completed', 0)]), WORKER);
    if (d.kind !== 'events') throw new Error('refused');
    expect(d.events.map((e) => e.type)).toEqual(['tool.call.completed', 'run.children_joined', 'run.resumed']);
    const done = d.events[0].data as unknown as {
      trust: string;
      result: { data: { results: Record<string, unknown>[] } };
    };
    expect(done.trust).toBe('external_untrusted');
    const results = done.result.data.results;
    expect(results.map((r) => [r.brief, r.status, r.answer])).toEqual([
      [1, 'completed', 'The result is 391.'],
      [2, 'failed', null],
    ]);
    expect(results[1].error).toEqual({ code: 'budget_exceeded', message: 'the child run failed: too many steps' });
  });

  it('is a no-op for a parent no longer waiting (joined already, or cancelled)', () => {
    expect(decideJoin(state([child('completed')], parentState()), WORKER)).toEqual({ kind: 'events', events: [] });
    expect(decideJoin(state([child('completed')], parentState(history.cancelled())), WORKER)).toEqual({
      kind: 'events',
      events: [],
    });
  });
});
