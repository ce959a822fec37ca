import fc from 'fast-check';
import { CancelRunCommand } from '../../../src/application/runs/cancel-run';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import type { Worker } from '../../../src/runtime/worker';
import { fuzzedObjectOf, noRefs } from '../../support/json-schema-arbitraries';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { createTestDb, type TestDb } from '../../support/test-db';
import { EVERYTHING, makeConfigDir, until } from '../mcp/mcp-support';

/**
 * Issue 36 item 4 / ADR 0041: fuzzed arguments into every tool an agent can call — the general
 * agent's built-in tools and server-everything's MCP tools — through the demo phrase
 * "call <tool> with <JSON object>", so they travel the real path: the model's tool call, validation,
 * policy, execution, the recorded outcome. Properties: every call ends in a recorded outcome
 * (completed, or a typed failure or denial, or a wait for a person that we then cancel), no run
 * fails for an internal reason, no run hangs, and the worker still runs a plain turn afterwards.
 * Seeded (TOOL_FUZZ_SEED); TOOL_FUZZ_RUNS sets the calls per tool.
 */
const SEED = Number(process.env.TOOL_FUZZ_SEED ?? 36_004);
const RUNS_PER_TOOL = Number(process.env.TOOL_FUZZ_RUNS ?? 4);

const MCP_YAML = `
version: 1
servers:
  - id: everything
    transport: { type: stdio, command: '\${node}', args: ['${EVERYTHING}', 'stdio'] }
    classification: { side_effect: read, risk: low, idempotency: read_only }
    call_timeout_seconds: 5
    max_output_bytes: 4096
`;

const FUZZ_AGENT = `
id: fuzz
version: 1
name: Tool fuzzing
instructions: Call the tools you are asked to call.
model_policy: demo
enabled_tools: [math.calculate, system.current_time, workspace.read_text, workspace.write_text,
  workspace.list_files, demo.external_write, conversation.ask_user, artifact.export,
  sandbox.run_command, sandbox.run_program]
mcp_servers: [everything]
policy_profile: default
limits: { max_steps: 4, max_model_calls: 6, max_tool_calls: 4, deadline_seconds: 60 }
`;

let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let config: { dir: string; remove(): void };

beforeAll(async () => {
  config = makeConfigDir(MCP_YAML, { 'fuzz.yaml': FUZZ_AGENT });
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, {
    configDir: config.dir,
    defaultAgentId: 'fuzz',
    leaseSeconds: 10,
    pollIntervalMs: 100,
  });
  worker = t.platform.createWorker({ concurrency: 4, pollIntervalMs: 100, drainMs: 5000 });
  await worker.start();
  // server-everything's tools are registered once its process has been discovered.
  await until(
    'the MCP tools',
    () => t.platform.registry.list().some((x) => x.spec.name.startsWith('mcp.everything.')),
    60_000,
  );
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await tdb?.drop();
  config?.remove();
});

/** What became of one fuzzed call. */
type Ending = 'completed' | 'failed' | 'denied' | 'waited' | 'refused_at_submit' | 'no_call';

const OUTCOMES: Record<string, Ending> = {
  'tool.call.completed': 'completed',
  'tool.call.failed': 'failed',
  'tool.call.denied': 'denied',
};
const WAITING = new Set(['waiting_for_approval', 'waiting_for_user']);

async function settle(runId: string): Promise<{ status: string; events: StoredEvent[] }> {
  const status = await until(
    `run ${runId} to end or wait for a person`,
    async () => {
      const run = await t.platform.runs.get(runId, null);
      return run && (['completed', 'failed', 'cancelled'].includes(run.status) || WAITING.has(run.status))
        ? run.status
        : null;
    },
    60_000,
  );
  if (WAITING.has(status)) {
    await t.commands.execute(new CancelRunCommand(LOCAL_PRINCIPAL, runId, 'tool fuzz: nobody answers'));
    return { status: await t.waitForTerminal(runId, 30_000), events: await t.events(runId) };
  }
  return { status, events: await t.events(runId) };
}

/** One fuzzed call through the demo phrase; throws when a property fails. */
async function fuzzCall(tool: string, args: Record<string, unknown>): Promise<Ending> {
  let runId: string;
  try {
    ({ runId } = await t.submit(`call ${tool} with ${JSON.stringify(args)}`));
  } catch (e) {
    // The message itself was refused (e.g. over the size limit): a clear error, nothing ran.
    if ((e as { code?: string }).code === 'validation_error') return 'refused_at_submit';
    throw e;
  }
  const { status, events } = await settle(runId);
  const failed = events.find((e) => e.type === 'run.failed');
  if (failed) throw new Error(`run ${runId} failed calling ${tool}: ${JSON.stringify(failed.data)}`);
  const proposed = events.find((e) => e.type === 'tool.call.proposed');
  if (!proposed) return 'no_call';
  const invocation = (proposed.data as { invocationId: string }).invocationId;
  const outcome = events.find(
    (e) => OUTCOMES[e.type] && (e.data as { invocationId?: string }).invocationId === invocation,
  );
  if (outcome) {
    const code =
      (outcome.data as { errorCode?: unknown; reasonCode?: unknown }).errorCode ??
      (outcome.data as { reasonCode?: unknown }).reasonCode;
    if (outcome.type !== 'tool.call.completed' && (typeof code !== 'string' || code === ''))
      throw new Error(`${tool}: ${outcome.type} without a typed code: ${JSON.stringify(outcome.data)}`);
    return OUTCOMES[outcome.type];
  }
  if (status === 'cancelled') return 'waited';
  throw new Error(`${tool}: run ${runId} ended ${status} with no outcome for its call`);
}

/**
 * `watch_resource` waits for a resource update up to its valid `timeout_seconds` (≤ 120, 30 when
 * absent) by design; a valid or absent wait is capped at 2 s here so the run ends inside the settle window. Every other value (a
 * wrong type, out of range) is sent as fuzzed, so its validation is still exercised.
 */
function boundedWait(tool: string, args: Record<string, unknown>): Record<string, unknown> {
  const wait = args.timeout_seconds;
  if (!tool.endsWith('.watch_resource')) return args;
  // Absent, the wait is 30 s: also capped.
  if (wait !== undefined && (typeof wait !== 'number' || !(wait > 2 && wait <= 120))) return args;
  return { ...args, timeout_seconds: 2 };
}

it('every tool, fuzzed through the demo phrase: a recorded outcome or a typed error, never a failed or hung run', async () => {
  const tools = t.platform.registry
    .list()
    .map((x) => x.spec)
    .filter((s) => FUZZ_AGENT.includes(s.name) || s.name.startsWith('mcp.everything.'));
  expect(tools.length).toBeGreaterThan(12);
  const tally: Record<string, Partial<Record<Ending, number>>> = {};
  for (const [i, spec] of tools.entries()) {
    const args = fc
      .sample(fuzzedObjectOf(spec.inputSchema, noRefs), { seed: SEED + i, numRuns: RUNS_PER_TOOL })
      .map((a) => boundedWait(spec.name, a));
    const endings = await Promise.all(args.map((a) => fuzzCall(spec.name, a)));
    const counts = (tally[spec.name] = {} as Partial<Record<Ending, number>>);
    for (const e of endings) counts[e] = (counts[e] ?? 0) + 1;
  }
  console.log(
    `tool fuzz (seed ${SEED}): ${tools.length} tools × ${RUNS_PER_TOOL}\n` +
      Object.entries(tally)
        .map(
          ([name, c]) =>
            `  ${name}: ${Object.entries(c)
              .map(([k, n]) => `${k}×${n}`)
              .join(' ')}`,
        )
        .join('\n'),
  );
  // The fuzzing reached the tools, not only the phrase parser.
  const all = Object.values(tally).flatMap((c) => Object.keys(c));
  expect(all).toEqual(expect.arrayContaining(['completed', 'failed']));
  // And the worker is still there for an ordinary turn.
  const { runId } = await t.submit('What is 2 to the power of 8?');
  expect(await t.waitForTerminal(runId, 30_000)).toBe('completed');
}, 600_000);
