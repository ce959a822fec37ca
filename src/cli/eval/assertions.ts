import { checkChildren } from './children-assertions';
import type { EventType } from '../../domain/events/payloads';
import type { ArtifactExpectation, Expected, TerminalRunStatus, ToolCallExpectation } from './case-types';
import { containsSubset } from './deep-subset';
import { errorCodesOf, executionsOf, finalTextOf, invocationsOf, type Observation } from './observation';

/**
 * The assertion checks of plan §20.2: pure functions of an Observation, no database. Each returns
 * human-readable failures prefixed with the YAML key that failed; an empty list means it held.
 */
type Check<K extends keyof Expected> = (value: NonNullable<Expected[K]>, obs: Observation) => string[];

/** One check per assertion key: the mapped type makes a new key in `Expected` a compile error here. */
const CHECKS: { readonly [K in keyof Required<Expected>]: Check<K> } = {
  terminalStatus: checkTerminalStatus,
  finalTextContains: checkFinalTextContains,
  finalTextMatches: checkFinalTextMatches,
  toolCalls: checkToolCalls,
  exactToolNames: checkExactToolNames,
  forbiddenToolCalls: checkForbiddenToolCalls,
  maximumSteps: (max, obs) => atMost('maximum_steps', 'steps', obs.run.stepCount, max),
  maximumModelCalls: (max, obs) => atMost('maximum_model_calls', 'model calls', obs.run.modelCallCount, max),
  maximumToolCalls: (max, obs) => atMost('maximum_tool_calls', 'tool calls', obs.run.toolCallCount, max),
  expectedErrorCode: checkExpectedErrorCode,
  eventOrder: checkEventOrder,
  eventCounts: checkEventCounts,
  approvalRequested: (want, obs) => checkApprovals('approval_requested', want, obs),
  approvalNotRequested: (want, obs) => checkApprovals('approval_not_requested', !want, obs),
  noUnauthorizedSideEffects: checkNoUnauthorizedSideEffects,
  toolExecutions: checkToolExecutions,
  artifacts: checkArtifacts,
  toolResultTrust: checkToolResultTrust,
  contextWithinLimit: (want, obs) => (want ? checkContextWithinLimit(obs) : []),
  contextCompactionsAtLeast: (min, obs) => {
    const n = obs.sessionEvents.filter((e) => e.type === 'context.compacted').length;
    return n >= min ? [] : [`context_compactions_at_least: expected at least ${min} compactions, the session has ${n}`];
  },
  summaryProvenanceValid: (want, obs) => (want ? checkSummaryProvenance(obs) : []),
  conversationReplayable: (want, obs) => (want ? checkConversationReplayable(obs) : []),
  toolExecutionsOverlap: checkToolExecutionsOverlap,
  sseReplayExact: (want, obs) => (want ? checkSseReplayExact(obs) : []),
  children: checkChildren,
};

/** Every model request of the session recorded a context build with a declared window it stayed within. */
function checkContextWithinLimit(obs: Observation): string[] {
  const failures: string[] = [];
  let requests = 0;
  for (const e of obs.sessionEvents) {
    if (e.type !== 'model.request.started') continue;
    requests += 1;
    const c = e.data.context;
    if (!c || c.limit === null)
      failures.push(`context_within_limit: request at sequence ${e.sequence} has no context limit`);
    else if (c.total > c.limit)
      failures.push(
        `context_within_limit: request at sequence ${e.sequence} needs ${c.total} tokens > limit ${c.limit}`,
      );
  }
  if (requests === 0) failures.push('context_within_limit: the session made no model request');
  return failures.slice(0, 5);
}

const CONVERSATION_TYPES = new Set([
  'user.message.created',
  'assistant.message.completed',
  'tool.call.proposed',
  'tool.call.completed',
  'tool.call.failed',
  'tool.call.denied',
]);

/** Each compaction's sources are conversation events of this session; each summary line names its own kind. */
function checkSummaryProvenance(obs: Observation): string[] {
  const bySeq = new Map(obs.sessionEvents.map((e) => [e.sequence, e]));
  const failures: string[] = [];
  const compactions = obs.sessionEvents.filter((e) => e.type === 'context.compacted');
  if (compactions.length === 0) return ['summary_provenance_valid: the session has no context.compacted event'];
  for (const e of compactions) {
    if (e.type !== 'context.compacted') continue;
    for (const s of e.data.sourceSequences) {
      const src = bySeq.get(s);
      if (!src || !CONVERSATION_TYPES.has(src.type))
        failures.push(
          `summary_provenance_valid: compaction at ${e.sequence} cites sequence ${s}, which is ${src ? src.type : 'missing'}`,
        );
    }
    for (const d of e.data.summary.dialogue) {
      const want = d.role === 'user' ? 'user.message.created' : 'assistant.message.completed';
      if (bySeq.get(d.sourceSequence)?.type !== want)
        failures.push(
          `summary_provenance_valid: a ${d.role} line of compaction ${e.sequence} cites sequence ${d.sourceSequence}`,
        );
    }
  }
  return failures.slice(0, 5);
}

/** Replaying the log yields every message: one user message per run, each run's answer, in order. */
function checkConversationReplayable(obs: Observation): string[] {
  const runs = new Map<string, { user: number; answers: number; completed: boolean }>();
  for (const e of obs.sessionEvents) {
    if (!e.runId) continue;
    const r = runs.get(e.runId) ?? { user: 0, answers: 0, completed: false };
    if (e.type === 'user.message.created') r.user += 1;
    if (e.type === 'assistant.message.completed') r.answers += 1;
    if (e.type === 'run.completed') r.completed = true;
    runs.set(e.runId, r);
  }
  const failures: string[] = [];
  for (const [runId, r] of runs) {
    if (r.user !== 1) failures.push(`conversation_replayable: run ${runId} has ${r.user} user messages in the log`);
    if (r.completed && r.answers !== 1)
      failures.push(`conversation_replayable: completed run ${runId} has ${r.answers} answers in the log`);
  }
  if (obs.submittedTexts) {
    const logged = obs.sessionEvents.flatMap((e) =>
      e.type === 'user.message.created' ? [e.data.content.map((p) => (p.type === 'text' ? p.text : '')).join('')] : [],
    );
    const i = obs.submittedTexts.findIndex((t, k) => logged[k] !== t);
    if (i >= 0 || logged.length !== obs.submittedTexts.length)
      failures.push(
        `conversation_replayable: the log's user messages differ from what was submitted (first difference at message ${i >= 0 ? i + 1 : logged.length + 1})`,
      );
  }
  const sequences = obs.sessionEvents.map((e) => e.sequence);
  if (sequences.some((s, i) => s !== i + 1)) failures.push('conversation_replayable: the session log has gaps');
  return failures.slice(0, 5);
}

/**
 * Every pair of executions of the named tools overlapped in time: each one's `tool.call.started`
 * (committed before a tool with an effect runs) precedes the other's end (`tool.call.completed` or
 * `tool.call.failed`, committed once it returned) in the log, and its start stamp is not later
 * than the other's end stamp. One after the other, the first would end before the second started.
 */
function checkToolExecutionsOverlap(tools: readonly string[], obs: Observation): string[] {
  const runs = executionsOf(obs.events).filter((x) => tools.includes(x.toolName));
  if (runs.length < 2)
    return [`tool_executions_overlap: expected at least two executions of ${tools.join(', ')}, saw ${runs.length}`];
  const unfinished = runs.filter((x) => x.end === null);
  if (unfinished.length > 0)
    return unfinished.map((x) => `tool_executions_overlap: ${x.toolName} ${x.invocationId} never ended`);
  const failures: string[] = [];
  for (const a of runs)
    for (const b of runs) {
      if (
        a === b ||
        (a.start.sequence < b.end!.sequence && Date.parse(a.start.createdAt) <= Date.parse(b.end!.createdAt))
      )
        continue;
      failures.push(
        `tool_executions_overlap: ${b.toolName} ${b.invocationId} ended (sequence ${b.end!.sequence}, ${b.end!.createdAt}) ` +
          `before ${a.toolName} ${a.invocationId} started (sequence ${a.start.sequence}, ${a.start.createdAt})`,
      );
    }
  return failures;
}

const RUN_TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/**
 * The client that was cut mid-run (case 22) got, before the cut, the log's first events up to its
 * Last-Event-ID, and after reconnecting with it exactly the run's events after that id — each once,
 * in order, none missing, ending with the terminal event. At least one of them was committed while
 * it was away, so the server replayed from the database, not only live.
 */
function checkSseReplayExact(obs: Observation): string[] {
  const sse = obs.sse;
  if (!sse) return ['sse_replay_exact: no SSE client was disconnected (no disconnect_sse fired)'];
  const show = (fs: readonly { id: number; type: string }[]) =>
    fs.length > 12
      ? `${fs
          .slice(0, 12)
          .map((f) => `${f.id} ${f.type}`)
          .join(', ')}, … (${fs.length})`
      : fs.map((f) => `${f.id} ${f.type}`).join(', ');
  const persisted = obs.events.map((e) => ({ id: e.sequence, type: e.type }));
  const same = (a: readonly { id: number; type: string }[], b: readonly { id: number; type: string }[]) =>
    a.length === b.length && a.every((f, i) => f.id === b[i].id && f.type === b[i].type);
  const failures: string[] = [];
  const head = persisted.filter((f) => f.id <= sse.lastEventId);
  if (!same(sse.beforeDisconnect, head))
    failures.push(
      `sse_replay_exact: before the disconnect the client got [${show(sse.beforeDisconnect)}], the log has [${show(head)}]`,
    );
  if (sse.runEndedBeforeDisconnect || sse.beforeDisconnect.some((f) => RUN_TERMINAL.has(f.type)))
    failures.push('sse_replay_exact: the client was disconnected after the run had ended, not mid-run');
  if (sse.committedWhileAway === 0)
    failures.push('sse_replay_exact: nothing was committed while the client was away, so nothing was replayed');
  const tail = persisted.filter((f) => f.id > sse.lastEventId);
  if (!same(sse.afterReconnect, tail))
    failures.push(
      `sse_replay_exact: after Last-Event-ID ${sse.lastEventId} the client got [${show(sse.afterReconnect)}], the log has [${show(tail)}]`,
    );
  if (!RUN_TERMINAL.has(sse.afterReconnect.at(-1)?.type ?? ''))
    failures.push("sse_replay_exact: the reconnected stream did not end with the run's terminal event");
  return failures;
}

/** Runs every assertion the case states, then the checks every case gets (idempotent submissions). */
export function checkExpectations(expected: Expected, obs: Observation): string[] {
  const failures: string[] = [];
  for (const key of Object.keys(CHECKS) as (keyof Expected)[]) failures.push(...runCheck(key, expected, obs));
  failures.push(...checkSubmissions(obs));
  return failures;
}

/** Generic in the key so the check and its value stay paired (a loop variable would widen them). */
function runCheck<K extends keyof Expected>(key: K, expected: Expected, obs: Observation): string[] {
  const value = expected[key];
  if (value === undefined) return [];
  const check: Check<K> = CHECKS[key];
  return check(value, obs);
}

function checkTerminalStatus(want: TerminalRunStatus, obs: Observation): string[] {
  if (obs.run.status === want) return [];
  const f = obs.run.failure;
  const why = f ? ` (${f.reason}: ${f.message})` : '';
  return [`terminal_status: expected ${want}, got ${obs.run.status}${why}`];
}

function checkFinalTextContains(needles: readonly string[], obs: Observation): string[] {
  const text = finalTextOf(obs);
  if (text === null) return [`final_text_contains: the run produced no final text (status ${obs.run.status})`];
  return needles
    .filter((n) => !text.includes(n))
    .map((n) => `final_text_contains: ${JSON.stringify(n)} is not in the final text ${quote(text)}`);
}

function checkFinalTextMatches(pattern: string, obs: Observation): string[] {
  const text = finalTextOf(obs);
  if (text === null) return [`final_text_matches: the run produced no final text (status ${obs.run.status})`];
  return new RegExp(pattern).test(text)
    ? []
    : [`final_text_matches: /${pattern}/ does not match the final text ${quote(text)}`];
}

function checkToolCalls(wanted: readonly ToolCallExpectation[], obs: Observation): string[] {
  const calls = invocationsOf(obs.events);
  return wanted.flatMap((w, i) => {
    const matching = calls.filter(
      (c) => c.toolName === w.name && (w.argumentsSubset === null || containsSubset(c.arguments, w.argumentsSubset)),
    );
    const what = `tool_calls[${i}] ${w.name}${w.argumentsSubset ? ` with arguments ⊇ ${JSON.stringify(w.argumentsSubset)}` : ''}`;
    const seen = calls.filter((c) => c.toolName === w.name).map((c) => JSON.stringify(c.arguments));
    const detail = seen.length > 0 ? `; calls of ${w.name}: ${seen.join(', ')}` : '';
    if (w.count === null) return matching.length > 0 ? [] : [`${what}: expected at least one call, saw none${detail}`];
    return matching.length === w.count ? [] : [`${what}: expected ${w.count} call(s), saw ${matching.length}${detail}`];
  });
}

function checkExactToolNames(names: readonly string[], obs: Observation): string[] {
  const seen = invocationsOf(obs.events).map((c) => c.toolName);
  const same = seen.length === names.length && seen.every((n, i) => n === names[i]);
  return same ? [] : [`exact_tool_names: expected [${names.join(', ')}], saw [${seen.join(', ')}]`];
}

function checkForbiddenToolCalls(names: readonly string[], obs: Observation): string[] {
  const calls = invocationsOf(obs.events);
  return names.flatMap((n) => {
    const count = calls.filter((c) => c.toolName === n).length;
    return count === 0 ? [] : [`forbidden_tool_calls: ${n} was called ${count} time(s)`];
  });
}

function atMost(key: string, what: string, actual: number, max: number): string[] {
  return actual <= max ? [] : [`${key}: the run used ${actual} ${what}, at most ${max} allowed`];
}

function checkExpectedErrorCode(code: string, obs: Observation): string[] {
  const codes = errorCodesOf(obs);
  if (codes.includes(code)) return [];
  return [
    `expected_error_code: ${code} was not produced; observed ${codes.length > 0 ? `[${codes.join(', ')}]` : 'no error codes'}`,
  ];
}

/** The listed types must occur as a subsequence of the run's events (other events may interleave). */
function checkEventOrder(order: readonly EventType[], obs: Observation): string[] {
  let from = 0;
  for (let i = 0; i < order.length; i++) {
    const at = obs.events.findIndex((e, idx) => idx >= from && e.type === order[i]);
    if (at < 0) {
      const after = i === 0 ? '' : ` after ${order[i - 1]} (event_order[${i - 1}])`;
      const everywhere = obs.events.some((e) => e.type === order[i]);
      return [
        `event_order: ${order[i]} (event_order[${i}]) does not occur${after}${everywhere ? ' (it occurs earlier)' : ''}; observed: ${typesOf(obs)}`,
      ];
    }
    from = at + 1;
  }
  return [];
}

function checkEventCounts(counts: Readonly<Partial<Record<EventType, number>>>, obs: Observation): string[] {
  return (Object.entries(counts) as [EventType, number][]).flatMap(([type, want]) => {
    const got = obs.sessionEvents.filter((e) => e.type === type).length;
    return got === want ? [] : [`event_counts: ${type} occurs ${got} time(s) in the session, expected ${want}`];
  });
}

function checkApprovals(key: string, wantRequested: boolean, obs: Observation): string[] {
  const requests = obs.events.filter((e) => e.type === 'approval.requested');
  if (wantRequested && requests.length === 0) return [`${key}: no approval was requested`];
  if (!wantRequested && requests.length > 0) {
    const tools = requests.map((e) => (e.type === 'approval.requested' ? e.data.toolName : '?'));
    return [`${key}: ${requests.length} approval(s) were requested (${tools.join(', ')})`];
  }
  return [];
}

/** Every execution must be preceded by an authorization of the same invocation (`false` checks nothing). */
function checkNoUnauthorizedSideEffects(want: boolean, obs: Observation): string[] {
  if (!want) return [];
  return invocationsOf(obs.events).flatMap((inv) =>
    inv.startedAt
      .filter((s) => !inv.authorizedAt.some((a) => a < s))
      .map(
        (s) =>
          `no_unauthorized_side_effects: ${inv.toolName} invocation ${inv.invocationId} started at sequence ${s} without a preceding tool.call.authorized`,
      ),
  );
}

function checkToolExecutions(counts: Readonly<Record<string, number>>, obs: Observation): string[] {
  const invocations = invocationsOf(obs.events);
  return Object.entries(counts).flatMap(([tool, want]) => {
    const mine = invocations.filter((i) => i.toolName === tool);
    const got = mine.reduce((n, i) => n + i.startedAt.length, 0);
    if (got === want) return [];
    const repeated = mine
      .filter((i) => i.startedAt.length > 1)
      .map((i) => `invocation ${i.invocationId} started ${i.startedAt.length} times`);
    return [
      `tool_executions: ${tool} started ${got} time(s), expected ${want}${repeated.length > 0 ? ` (${repeated.join('; ')})` : ''}`,
    ];
  });
}

/** Every completed call of each named tool carried this trust label (plan §11.2); at least one must exist. */
function checkToolResultTrust(wanted: Readonly<Record<string, string>>, obs: Observation): string[] {
  const names = new Map(invocationsOf(obs.events).map((i) => [i.invocationId, i.toolName]));
  return Object.entries(wanted).flatMap(([tool, label]) => {
    const labels = obs.events.flatMap((e) =>
      e.type === 'tool.call.completed' && names.get(e.data.invocationId) === tool ? [e.data.trust] : [],
    );
    if (labels.length === 0) return [`tool_result_trust: ${tool} has no completed result`];
    const wrong = labels.filter((l) => l !== label);
    return wrong.length === 0
      ? []
      : [`tool_result_trust: ${tool} results were labelled [${labels.join(', ')}], expected ${label}`];
  });
}

function checkArtifacts(wanted: readonly ArtifactExpectation[], obs: Observation): string[] {
  const created = obs.events.flatMap((e) => (e.type === 'artifact.created' ? [e.data] : []));
  return wanted.flatMap((w, i) => {
    const named = created.filter((a) => a.name === w.name);
    if (named.length === 0) return [`artifacts[${i}]: no artifact named ${JSON.stringify(w.name)} was created`];
    const ok = named.some(
      (a) => (w.sha256 === null || a.sha256 === w.sha256) && (w.mediaType === null || a.mediaType === w.mediaType),
    );
    if (ok) return [];
    const seen = named.map((a) => `${a.mediaType} sha256 ${a.sha256}`).join(', ');
    return [
      `artifacts[${i}]: ${w.name} exists but does not match${w.sha256 ? ` sha256 ${w.sha256}` : ''}${w.mediaType ? ` media type ${w.mediaType}` : ''} (saw ${seen})`,
    ];
  });
}

/**
 * A case that submits the same message twice with one idempotency key (case 23) must get one run
 * back both times, the repeat flagged as a replay, and exactly one `run.queued` in its session.
 */
function checkSubmissions(obs: Observation): string[] {
  if (obs.submissions.length < 2) return [];
  const [first, ...repeats] = obs.submissions;
  const failures = repeats.flatMap((s, i) => {
    const n = i + 2;
    if (s.runId !== first.runId)
      return [`idempotent submission: submission ${n} created run ${s.runId}, expected the first run ${first.runId}`];
    return s.replayed ? [] : [`idempotent submission: submission ${n} returned the run but was not marked as a replay`];
  });
  const queued = obs.sessionEvents.filter((e) => e.type === 'run.queued').length;
  if (queued !== 1) failures.push(`idempotent submission: the session has ${queued} run.queued events, expected 1`);
  return failures;
}

function typesOf(obs: Observation): string {
  const types = obs.events.map((e) => e.type);
  return types.length > 40 ? `${types.slice(0, 40).join(', ')}, … (${types.length} events)` : types.join(', ');
}

function quote(text: string, max = 120): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, max - 1)}…` : text);
}
