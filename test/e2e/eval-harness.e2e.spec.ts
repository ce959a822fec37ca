import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { checkExpectations } from '../../src/cli/eval/assertions';
import { CaseFileError } from '../../src/cli/eval/case-errors';
import type { EvalCase, Expected } from '../../src/cli/eval/case-types';
import type { EvalResult } from '../../src/cli/eval/eval-result';
import { InterventionTracker } from '../../src/cli/eval/interventions';
import { loadCases } from '../../src/cli/eval/load-cases';
import type { Observation, ObservedRun } from '../../src/cli/eval/observation';
import { formatProgressLine, formatSummary } from '../../src/cli/eval/report';
import { runSuite } from '../../src/cli/eval/runner';
import { selectCases } from '../../src/cli/eval/select-cases';
import { createPlatform, type Platform } from '../../src/composition/platform';
import { projectRoot } from '../../src/config/project-root';
import { loadSettings } from '../../src/config/settings';
import type { EventPayloads, EventType, StoredEvent } from '../../src/domain/events/payloads';
import { createTestDb, type TestDb } from '../support/test-db';

const CASES_DIR = path.join(projectRoot(), 'evals', 'cases');
const FIXTURES_DIR = path.join(projectRoot(), 'config', 'model-fixtures');

// ---------------------------------------------------------------------------------------------
// The whole suite against a fresh database, through the runner API
// ---------------------------------------------------------------------------------------------

describe('eval suite (evals/cases)', () => {
  let tdb: TestDb;
  let platform: Platform;

  beforeAll(async () => {
    tdb = await createTestDb();
    // A short lease: the crash cases wait for it to expire before the run is reclaimed.
    platform = await createPlatform(
      { ...loadSettings(), leaseSeconds: 3 },
      { service: 'eval', databaseUrl: tdb.url, quiet: true },
    );
  });
  afterAll(async () => {
    await platform?.close();
    await tdb?.drop();
  });

  it('has the 25 cases of plan §20.3 and the long-session cases of issue #11, numbered 01 to 27', () => {
    const cases = loadCases(CASES_DIR, { fixturesDir: FIXTURES_DIR });
    expect(cases.map((c) => Number(c.id.slice(0, 2)))).toEqual(Array.from({ length: 27 }, (_, i) => i + 1));
  });

  // The long-session cases (hundreds of turns each) run on their own, with their own timeout.
  const LONG_SESSION = ['26_long_session_within_limit', '27_constraint_survives_compaction'];

  it('passes the long-session cases (context engine, issue #11)', async () => {
    const cases = loadCases(CASES_DIR, { fixturesDir: FIXTURES_DIR }).filter((c) => LONG_SESSION.includes(c.id));
    const results = await runSuite(platform, cases);
    expect(results.map((r) => [r.name, r.status, r.failures])).toEqual(LONG_SESSION.map((n) => [n, 'passed', []]));
  }, 900_000);

  it('passes every case: none is pending', async () => {
    const cases = loadCases(CASES_DIR, { fixturesDir: FIXTURES_DIR }).filter((c) => !LONG_SESSION.includes(c.id));
    expect(cases.filter((c) => c.pending !== null).map((c) => c.id)).toEqual([]);
    const results = await runSuite(platform, cases);
    const failed = results
      .filter((r) => r.status !== 'passed')
      .map((r) => `${r.name} ${r.status} (run ${r.runId ?? '-'}): ${r.failures.join(' | ')}`);
    expect(failed).toEqual([]);
    expect(results.map((r) => Number(r.name.slice(0, 2)))).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  }, 180_000);
});

// ---------------------------------------------------------------------------------------------
// Assertions: pure, on hand-built observations
// ---------------------------------------------------------------------------------------------

let sequence = 0;
function ev<T extends EventType>(type: T, data: EventPayloads[T]): StoredEvent {
  sequence += 1;
  return {
    id: sequence,
    sessionId: 's1',
    runId: 'r1',
    sequence,
    type,
    schemaVersion: 1,
    data,
    actorType: 'worker',
    actorId: null,
    tenantId: 'local',
    traceId: null,
    createdAt: new Date(0).toISOString(),
  } as unknown as StoredEvent;
}

function proposed(invocationId: string, toolName: string, args: Record<string, unknown>): StoredEvent {
  return ev('tool.call.proposed', {
    invocationId,
    step: 1,
    callId: `c-${invocationId}`,
    toolName,
    toolVersion: '1',
    arguments: args,
    argumentsHash: 'h',
    idempotencyKey: 'k',
  });
}
const authorized = (invocationId: string) =>
  ev('tool.call.authorized', { invocationId, decision: 'allow', reasonCode: 'pure_computation', policyVersion: 'p' });
const started = (invocationId: string) => ev('tool.call.started', { invocationId });
const completed = (invocationId: string) =>
  ev('tool.call.completed', {
    invocationId,
    result: { result: '391' },
    truncated: false,
    latencyMs: 1,
    trust: 'internal_tool',
  });

/** A completed calculator run like case 2's, with overrides for the bit a test breaks. */
function calculatorObservation(over: { run?: Partial<ObservedRun>; events?: StoredEvent[] } = {}): Observation {
  sequence = 0;
  const events = over.events ?? [
    ev('run.queued', {
      agentId: 'general',
      agentVersion: 1,
      principalId: 'p',
      modelPolicy: 'fake:x',
      userMessageId: null,
      limits: {
        maxSteps: 10,
        maxModelCalls: 10,
        maxToolCalls: 10,
        maxInputTokens: null,
        maxOutputTokens: null,
        maxCost: null,
        deadlineSeconds: null,
      },
      priority: 100,
      idempotencyKey: null,
      requestHash: null,
      scopes: ['tools.use'],
    }),
    ev('run.started', { attempt: 1, deadlineAt: null, traceId: null }),
    proposed('i1', 'math.calculate', { expression: '17 * 23' }),
    authorized('i1'),
    started('i1'),
    completed('i1'),
    ev('assistant.message.completed', { messageId: 'm', text: 'The result is 391.' }),
    ev('run.completed', { messageId: 'm' }),
  ];
  const run: ObservedRun = {
    id: 'r1',
    status: 'completed',
    failure: null,
    finalText: 'The result is 391.',
    stepCount: 2,
    modelCallCount: 2,
    toolCallCount: 1,
    ...over.run,
  };
  return { run, events, sessionEvents: events, submissions: [{ runId: 'r1', replayed: false }] };
}

const calculatorExpected: Expected = {
  terminalStatus: 'completed',
  finalTextContains: ['391'],
  toolCalls: [{ name: 'math.calculate', count: 1, argumentsSubset: { expression: '17 * 23' } }],
  exactToolNames: ['math.calculate'],
  forbiddenToolCalls: ['weather.lookup'],
  maximumSteps: 3,
  maximumModelCalls: 2,
  maximumToolCalls: 1,
  eventOrder: ['run.started', 'tool.call.started', 'run.completed'],
  eventCounts: { 'run.queued': 1 },
  approvalNotRequested: true,
  noUnauthorizedSideEffects: true,
  toolExecutions: { 'math.calculate': 1 },
};

describe('eval assertions', () => {
  it('passes a run that meets every assertion', () => {
    expect(checkExpectations(calculatorExpected, calculatorObservation())).toEqual([]);
  });

  it('names the expected and actual status and the failure reason', () => {
    const obs = calculatorObservation({
      run: { status: 'failed', failure: { reason: 'max_steps_exceeded', message: 'run reached its limit of 3 steps' } },
    });
    expect(checkExpectations({ terminalStatus: 'completed' }, obs)).toEqual([
      'terminal_status: expected completed, got failed (max_steps_exceeded: run reached its limit of 3 steps)',
    ]);
  });

  it('quotes the missing text and the final text', () => {
    expect(checkExpectations({ finalTextContains: ['391', '408'] }, calculatorObservation())).toEqual([
      'final_text_contains: "408" is not in the final text "The result is 391."',
    ]);
    expect(checkExpectations({ finalTextMatches: '^\\d+$' }, calculatorObservation())[0]).toContain(
      '/^\\d+$/ does not match',
    );
  });

  it('reports tool call counts, argument subsets and the calls it saw', () => {
    const [failure] = checkExpectations(
      { toolCalls: [{ name: 'math.calculate', count: 1, argumentsSubset: { expression: '2 + 2' } }] },
      calculatorObservation(),
    );
    expect(failure).toBe(
      'tool_calls[0] math.calculate with arguments ⊇ {"expression":"2 + 2"}: expected 1 call(s), saw 0; calls of math.calculate: {"expression":"17 * 23"}',
    );
    expect(checkExpectations({ exactToolNames: [] }, calculatorObservation())).toEqual([
      'exact_tool_names: expected [], saw [math.calculate]',
    ]);
    expect(checkExpectations({ forbiddenToolCalls: ['math.calculate'] }, calculatorObservation())).toEqual([
      'forbidden_tool_calls: math.calculate was called 1 time(s)',
    ]);
  });

  it('reports limits that were exceeded', () => {
    expect(checkExpectations({ maximumSteps: 1, maximumToolCalls: 0 }, calculatorObservation())).toEqual([
      'maximum_steps: the run used 2 steps, at most 1 allowed',
      'maximum_tool_calls: the run used 1 tool calls, at most 0 allowed',
    ]);
  });

  it('lists the error codes that were observed when the expected one is missing', () => {
    sequence = 0;
    const events = [
      proposed('i1', 'weather.lookup', {}),
      ev('tool.call.denied', {
        invocationId: 'i1',
        reasonCode: 'unknown_tool',
        explanation: 'no such tool',
        policyVersion: 'p',
      }),
    ];
    const obs = calculatorObservation({
      events,
      run: { failure: { reason: 'loop_detected', message: 'x', errorCode: 'loop_detected' }, status: 'failed' },
    });
    expect(checkExpectations({ expectedErrorCode: 'unknown_tool' }, obs)).toEqual([]);
    expect(checkExpectations({ expectedErrorCode: 'tool_validation_error' }, obs)).toEqual([
      'expected_error_code: tool_validation_error was not produced; observed [loop_detected, unknown_tool]',
    ]);
  });

  it('checks event order as a subsequence and says which event is out of place', () => {
    const [failure] = checkExpectations(
      { eventOrder: ['tool.call.completed', 'tool.call.started'] },
      calculatorObservation(),
    );
    expect(failure).toMatch(
      /^event_order: tool\.call\.started \(event_order\[1\]\) does not occur after tool\.call\.completed \(event_order\[0\]\) \(it occurs earlier\); observed: run\.queued, /,
    );
    expect(checkExpectations({ eventOrder: ['run.started', 'run.started'] }, calculatorObservation())[0]).toContain(
      'run.started (event_order[1]) does not occur after run.started',
    );
  });

  it('detects a tool started without authorization and a duplicate execution', () => {
    sequence = 0;
    const events = [
      proposed('i1', 'math.calculate', {}),
      started('i1'),
      authorized('i1'),
      started('i1'),
      completed('i1'),
    ];
    const failures = checkExpectations(
      { noUnauthorizedSideEffects: true, toolExecutions: { 'math.calculate': 1 } },
      calculatorObservation({ events }),
    );
    expect(failures).toEqual([
      'no_unauthorized_side_effects: math.calculate invocation i1 started at sequence 2 without a preceding tool.call.authorized',
      'tool_executions: math.calculate started 2 time(s), expected 1 (invocation i1 started 2 times)',
    ]);
  });

  it('requires every pair of executions of the named tools to overlap: each started before the other ended', () => {
    const stamp = (e: StoredEvent, ms: number) => ({ ...e, createdAt: new Date(ms).toISOString() }) as StoredEvent;
    sequence = 0;
    const parallel = [
      proposed('a', 'workspace.read_text', { path: 'first.md' }),
      stamp(started('a'), 10),
      proposed('b', 'workspace.read_text', { path: 'second.md' }),
      stamp(started('b'), 12),
      stamp(completed('a'), 20),
      stamp(completed('b'), 21),
    ];
    const overlap = { toolExecutionsOverlap: ['workspace.read_text'] };
    expect(checkExpectations(overlap, calculatorObservation({ events: parallel }))).toEqual([]);
    sequence = 0;
    const oneAfterTheOther = [
      proposed('a', 'workspace.read_text', { path: 'first.md' }),
      stamp(started('a'), 10),
      stamp(completed('a'), 11),
      proposed('b', 'workspace.read_text', { path: 'second.md' }),
      stamp(started('b'), 12),
      stamp(completed('b'), 13),
    ];
    expect(checkExpectations(overlap, calculatorObservation({ events: oneAfterTheOther }))).toEqual([
      'tool_executions_overlap: workspace.read_text a ended (sequence 3, 1970-01-01T00:00:00.011Z) before workspace.read_text b started (sequence 5, 1970-01-01T00:00:00.012Z)',
    ]);
    expect(checkExpectations(overlap, calculatorObservation())).toEqual([
      'tool_executions_overlap: expected at least two executions of workspace.read_text, saw 0',
    ]);
  });

  it('requires the SSE client cut mid-run to get exactly the rest of the log after Last-Event-ID', () => {
    const obs = calculatorObservation();
    const frames = obs.events.map((e) => ({ id: e.sequence, type: e.type }));
    const exact = {
      beforeDisconnect: frames.slice(0, 3),
      lastEventId: 3,
      runEndedBeforeDisconnect: false,
      committedWhileAway: 2,
      afterReconnect: frames.slice(3),
    };
    const want = { sseReplayExact: true };
    expect(checkExpectations(want, { ...obs, sse: exact })).toEqual([]);
    expect(checkExpectations(want, obs)).toEqual([
      'sse_replay_exact: no SSE client was disconnected (no disconnect_sse fired)',
    ]);
    const duplicated = { ...exact, afterReconnect: frames.slice(2) };
    expect(checkExpectations(want, { ...obs, sse: duplicated })[0]).toMatch(
      /^sse_replay_exact: after Last-Event-ID 3 the client got \[3 tool\.call\.proposed, 4 /,
    );
    const missing = { ...exact, afterReconnect: frames.slice(4) };
    expect(checkExpectations(want, { ...obs, sse: missing })).toHaveLength(1);
    const late = { ...exact, runEndedBeforeDisconnect: true, committedWhileAway: 0 };
    expect(checkExpectations(want, { ...obs, sse: late })).toEqual([
      'sse_replay_exact: the client was disconnected after the run had ended, not mid-run',
      'sse_replay_exact: nothing was committed while the client was away, so nothing was replayed',
    ]);
  });

  it('checks approvals both ways and artifacts', () => {
    expect(checkExpectations({ approvalRequested: true }, calculatorObservation())).toEqual([
      'approval_requested: no approval was requested',
    ]);
    expect(checkExpectations({ approvalNotRequested: false }, calculatorObservation())).toEqual([
      'approval_not_requested: no approval was requested',
    ]);
    expect(
      checkExpectations({ artifacts: [{ name: 'report.md', sha256: null, mediaType: null }] }, calculatorObservation()),
    ).toEqual(['artifacts[0]: no artifact named "report.md" was created']);
  });

  it('requires a repeated idempotent submission to return the first run and queue it once', () => {
    const obs = calculatorObservation();
    const ok = {
      ...obs,
      submissions: [
        { runId: 'r1', replayed: false },
        { runId: 'r1', replayed: true },
      ],
    };
    expect(checkExpectations({}, ok)).toEqual([]);
    const twoRuns = {
      ...obs,
      sessionEvents: [...obs.sessionEvents, obs.events[0]],
      submissions: [
        { runId: 'r1', replayed: false },
        { runId: 'r2', replayed: false },
      ],
    };
    expect(checkExpectations({}, twoRuns)).toEqual([
      'idempotent submission: submission 2 created run r2, expected the first run r1',
      'idempotent submission: the session has 2 run.queued events, expected 1',
    ]);
    expect(checkExpectations({ eventCounts: { 'run.queued': 1 } }, twoRuns)[0]).toBe(
      'event_counts: run.queued occurs 2 time(s) in the session, expected 1',
    );
  });
});

describe('InterventionTracker', () => {
  it('fires each intervention once, on the n-th event of its type', () => {
    sequence = 0;
    const crash = { atEvent: 'run.claimed' as const, occurrence: 2, action: 'crash_worker' as const };
    const cancel = { atEvent: 'run.started' as const, occurrence: 1, action: 'cancel' as const };
    const t = new InterventionTracker([crash, cancel]);
    const claimed = () => ev('run.claimed', { workerId: 'w', leaseEpoch: 1, attempt: 1 });
    expect(t.observe(claimed())).toEqual([]);
    expect(t.observe(ev('run.started', { attempt: 1, deadlineAt: null, traceId: null }))).toEqual([cancel]);
    expect(t.observe(ev('run.started', { attempt: 2, deadlineAt: null, traceId: null }))).toEqual([]);
    expect(t.unfired()).toEqual([crash]);
    expect(t.observe(claimed())).toEqual([crash]);
    expect(t.observe(claimed())).toEqual([]);
    expect(t.unfired()).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Case files: validation names the file and the field
// ---------------------------------------------------------------------------------------------

describe('loadCases', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'eval-cases-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const write = (file: string, text: string) => fs.writeFileSync(path.join(dir, file), text);
  const load = () => loadCases(dir, { fixturesDir: FIXTURES_DIR, displayPath: (p) => path.basename(p) });
  const issuesOf = (fn: () => unknown): string[] => {
    try {
      fn();
    } catch (e) {
      if (e instanceof CaseFileError) return e.issues.map((i) => `${i.file}: ${i.field}: ${i.message}`);
      throw e;
    }
    throw new Error('expected a CaseFileError');
  };
  const valid = `name: calc
description: d
input: { text: "17 * 23?" }
model_fixture: calculator_then_answer
limits: { max_steps: 3 }
interventions: [{ at_event: tool.call.completed, action: crash_worker }]
expected:
  terminal_status: completed
  tool_calls: [{ name: math.calculate, count: 1 }]
`;

  it('maps a valid file to a case', () => {
    write('02_calc.yaml', valid);
    const [c] = load();
    expect(c).toMatchObject<Partial<EvalCase>>({
      id: '02_calc',
      name: 'calc',
      agentId: 'general',
      modelFixture: 'calculator_then_answer',
      limits: { maxSteps: 3 },
      interventions: [{ atEvent: 'tool.call.completed', occurrence: 1, action: 'crash_worker' }],
      pending: null,
      expected: {
        terminalStatus: 'completed',
        toolCalls: [{ name: 'math.calculate', count: 1, argumentsSubset: null }],
      },
    });
  });

  it('rejects unknown assertion keys, bad values and missing fields, naming file and field', () => {
    write(
      '01_a.yaml',
      valid
        .replace('name: calc', 'name: a')
        .replace('  terminal_status: completed', '  terminal_status: done\n  maximum_stepz: 3'),
    );
    write(
      '02_b.yaml',
      'name: b\ndescription: d\nmodel_fixture: direct_answer\nexpected: { tool_calls: [{ count: -1 }], event_order: [run.exploded] }\n',
    );
    write(
      '03_c.yaml',
      valid
        .replace('name: calc', 'name: c')
        .replace('  terminal_status: completed', '  event_counts: { run.exploded: 1 }'),
    );
    expect(issuesOf(load)).toEqual([
      '01_a.yaml: expected.maximum_stepz: is not a known key',
      '01_a.yaml: expected.terminal_status: must be one of completed, failed, cancelled, interrupted',
      '02_b.yaml: input: is required',
      expect.stringMatching(/^02_b\.yaml: expected\.tool_calls\[0\]\.name: is required$/),
      '02_b.yaml: expected.tool_calls[0].count: must be >= 0',
      expect.stringMatching(/^02_b\.yaml: expected\.event_order\[0\]: must be one of the \d+ allowed values/),
      expect.stringMatching(
        /^03_c\.yaml: expected\.event_counts\.run\.exploded: is not an allowed key \(must be one of/,
      ),
    ]);
  });

  it('checks the file name, the fixture, the regex and YAML syntax', () => {
    write(
      '03_other.yaml',
      valid
        .replace('calculator_then_answer', 'no_such_fixture')
        .replace('  terminal_status: completed', '  final_text_matches: "("'),
    );
    write('04_bad.yaml', 'name: [unclosed\n');
    write('notes.yaml', valid);
    const issues = issuesOf(load);
    expect(issues).toContain('03_other.yaml: name: must match the file name ("other" in 03_other.yaml)');
    expect(issues).toContain(`03_other.yaml: model_fixture: no fixture "no_such_fixture" in model-fixtures`);
    expect(
      issues.some((i) => i.startsWith('03_other.yaml: expected.final_text_matches: is not a valid regular expression')),
    ).toBe(true);
    expect(issues.some((i) => i.startsWith('04_bad.yaml: (file): YAML:'))).toBe(true);
    expect(issues).toContain('notes.yaml: (file): file name must be NN_<name>.yaml, e.g. 02_calculator_tool.yaml');
  });

  it('lets pending cases name fixtures that do not exist yet', () => {
    write(
      '12_later.yaml',
      `${valid.replace('name: calc', 'name: later').replace('calculator_then_answer', 'future_fixture')}pending: its feature is not built yet\n`,
    );
    expect(load()[0].pending).toBe('its feature is not built yet');
  });

  it('pairs a disconnect_sse intervention with sse_replay_exact, each needing the other', () => {
    write(
      '05_cut.yaml',
      valid
        .replace('name: calc', 'name: cut')
        .replace('action: crash_worker', 'action: disconnect_sse')
        .replace('  terminal_status: completed', '  terminal_status: completed\n  sse_replay_exact: true'),
    );
    expect(load()[0].interventions).toEqual([
      { atEvent: 'tool.call.completed', occurrence: 1, action: 'disconnect_sse', text: null },
    ]);
    write(
      '05_cut.yaml',
      valid.replace('name: calc', 'name: cut').replace('action: crash_worker', 'action: disconnect_sse'),
    );
    write(
      '06_alone.yaml',
      valid
        .replace('name: calc', 'name: alone')
        .replace('  terminal_status: completed', '  terminal_status: completed\n  sse_replay_exact: true'),
    );
    expect(issuesOf(load)).toEqual([
      '05_cut.yaml: interventions: a disconnect_sse intervention needs expected.sse_replay_exact: true',
      '06_alone.yaml: expected.sse_replay_exact: needs exactly one disconnect_sse intervention',
    ]);
  });

  it('selects cases by id, name or number and refuses unknown selectors', () => {
    const cases = loadCases(CASES_DIR, { fixturesDir: FIXTURES_DIR });
    expect(selectCases(cases, ['2', 'step_limit', '17_restart_after_tool_success']).map((c) => c.id)).toEqual([
      '02_calculator_tool',
      '10_step_limit',
      '17_restart_after_tool_success',
    ]);
    expect(() => selectCases(cases, ['nope'])).toThrow('no eval case matches "nope"');
  });
});

describe('eval report', () => {
  const results: EvalResult[] = [
    { name: '02_calculator_tool', status: 'passed', failures: [], durationMs: 420, runId: 'r1', pendingReason: null },
    {
      name: '10_step_limit',
      status: 'failed',
      failures: ['terminal_status: expected failed, got completed', 'x'],
      durationMs: 900,
      runId: 'r2',
      pendingReason: null,
    },
    {
      name: '12_approval',
      status: 'pending',
      failures: [],
      durationMs: 0,
      runId: null,
      pendingReason: 'its feature is not built yet',
    },
  ];

  it('prints one progress line per case', () => {
    expect(results.map((r) => formatProgressLine(r, 18))).toEqual([
      '✓ 02_calculator_tool  0.4 s',
      '✗ 10_step_limit       0.9 s  terminal_status: expected failed, got completed',
      '○ 12_approval         pending: its feature is not built yet',
    ]);
  });

  it('ends the summary with the counts', () => {
    const summary = formatSummary(results);
    expect(summary).toContain('    - terminal_status: expected failed, got completed');
    expect(summary.split('\n').at(-1)).toBe('1 passed, 1 failed, 1 pending');
  });
});
