import { ContextEngine, type ContextBuildInputs } from '../src/context/engine';
import { LOCAL_PRINCIPAL } from '../src/domain/principal';
import type { ToolSpec } from '../src/domain/tools/tool-spec';
import { printTable, formatCount } from './support/print-table';
import { MemoryHistorySource, syntheticSession } from './support/session-history';

/**
 * `npm run bench -- context`: context.build time and memory for sessions of 100, 1,000 and 10,000
 * events (issue #11; target < 20 ms at 10,000 events). "cold" is the first build of a session in a
 * fresh engine (it folds the whole log once); "warm" is a build after one more turn was appended -
 * what every later step and run pays, since the engine reads only the events after the last one it
 * saw. The history comes from an in-memory source, so the figures are the engine's own cost; the
 * store's `listAfter` query is on top (one indexed range read of the new events).
 */
const SIZES = [100, 1_000, 10_000];
const WARM_ROUNDS = 30;

const TOOLS = [
  {
    name: 'math.calculate',
    description: 'Evaluates an arithmetic expression.',
    inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
  },
] as unknown as ToolSpec[];

function inputs(runId: string, messageId: string, contextLimit: number, n: number): ContextBuildInputs {
  return {
    sessionId: 'bench-session',
    agent: {
      id: 'general',
      version: 1,
      name: 'General',
      instructions: 'You are a helpful assistant. '.repeat(40),
      modelPolicy: 'fake:x',
      enabledTools: ['math.calculate'],
      enabledSkills: [],
      policyProfile: 'default',
      limits: {
        maxSteps: 10,
        maxModelCalls: 10,
        maxToolCalls: 10,
        maxInputTokens: null,
        maxOutputTokens: 4_096,
        maxCost: null,
        deadlineSeconds: null,
      },
      metadata: {},
    },
    principal: LOCAL_PRINCIPAL,
    runId,
    userMessageId: messageId,
    step: 1,
    tools: TOOLS,
    nowIso: '2026-11-30T12:00:00.000Z',
    attemptId: 'a',
    model: { provider: 'anthropic', model: 'claude-sonnet-4-6', contextLimit },
    newId: () => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  };
}

function heapMb(): number {
  global.gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

async function measure(events: number, contextLimit: number): Promise<string[]> {
  // About eight events per turn (a tool call every other turn).
  const { log } = syntheticSession({ turns: Math.max(1, Math.round(events / 8)), toolEvery: 2 });
  log.events.length = Math.min(log.events.length, events);
  const source = new MemoryHistorySource(log.events);
  const engine = new ContextEngine(source);
  let turn = 1_000_000;
  const next = () => {
    turn += 1;
    const runId = `run-${turn}`;
    log.push('user.message.created', runId, {
      messageId: `msg-${turn}`,
      content: [{ type: 'text', text: `Next question ${turn}?` }],
    });
    return { runId, messageId: `msg-${turn}` };
  };
  // Cold: the first build of the session in a fresh engine (median of five engines).
  const first = next();
  const colds: number[] = [];
  for (let i = 0; i < 5; i++) {
    const fresh = new ContextEngine(new MemoryHistorySource(log.events));
    const t = performance.now();
    await fresh.build(inputs(first.runId, first.messageId, contextLimit, turn));
    colds.push(performance.now() - t);
  }
  const coldMs = colds.sort((a, b) => a - b)[2];
  const heapBefore = heapMb();
  let t0 = performance.now();
  const cold = await engine.build(inputs(first.runId, first.messageId, contextLimit, turn));
  void t0;
  const coldRead = source.read;
  const times: number[] = [];
  let readWarm = 0;
  let compactions = cold.events.length;
  for (let i = 0; i < WARM_ROUNDS; i++) {
    log.turn(turn + 100_000 + i, { user: `Interim ${i}`, assistant: `Answer ${i}`, tool: i % 2 === 0 });
    const { runId, messageId } = next();
    const before = source.read;
    t0 = performance.now();
    const b = await engine.build(inputs(runId, messageId, contextLimit, turn));
    times.push(performance.now() - t0);
    readWarm += source.read - before;
    compactions += b.events.length;
    for (const e of b.events) log.push('context.compacted', runId, e.data as never);
  }
  const heapAfter = heapMb();
  times.sort((a, b) => a - b);
  const p50 = times[Math.floor(times.length / 2)];
  const p95 = times[Math.floor(times.length * 0.95)];
  return [
    formatCount(events),
    formatCount(contextLimit),
    formatCount(coldRead),
    coldMs.toFixed(2),
    (readWarm / WARM_ROUNDS).toFixed(1),
    p50.toFixed(3),
    p95.toFixed(3),
    String(compactions),
    (heapAfter - heapBefore).toFixed(1),
  ];
}

export async function runContextBench(): Promise<void> {
  const rows: string[][] = [];
  await measure(1_000, 200_000); // warm-up: JIT and ICU, discarded
  for (const limit of [200_000, 8_000]) {
    for (const n of SIZES) rows.push(await measure(n, limit));
  }
  console.log(
    `context.build (cold: median of 5 fresh engines; warm: ${WARM_ROUNDS} builds, each after one more turn; heap = growth incl. the cached history)`,
  );
  printTable(
    [
      { header: 'events', right: true },
      { header: 'window', right: true },
      { header: 'cold read', right: true },
      { header: 'cold ms', right: true },
      { header: 'warm read/build', right: true },
      { header: 'warm p50 ms', right: true },
      { header: 'warm p95 ms', right: true },
      { header: 'compactions', right: true },
      { header: 'heap MB', right: true },
    ],
    rows,
  );
}
