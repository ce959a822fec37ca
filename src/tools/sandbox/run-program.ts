import type { ToolResult, ToolSpec } from '../../domain/tools/tool-spec';
import type { ArtifactStore } from '../../ports/artifact-store';
import type { EnvironmentHandle, ExecutionEnvironment, ResourceLimits } from '../../ports/execution-environment';
import { ExecutionRequestError } from '../../ports/execution-environment';
import type { ToolExecutionContext } from '../../ports/tool';
import type { BridgeCall, BridgeSession, ToolBridge } from '../../ports/tool-bridge';
import { checkTimeout, effectiveTimeoutSeconds } from '../../domain/sandbox/request-checks';
import type { ExtendedTool } from '../tool-extensions';
import { JAVASCRIPT_CLIENT, PYTHON_CLIENT } from './bridge-clients';
import {
  MAX_REQUESTED_TIMEOUT_SECONDS,
  MAX_SYNC_BYTES,
  presentResult,
  TOOL_TIMEOUT_CEILING_SECONDS,
  type SessionWorkspaceAccess,
} from './run-command';

/** Largest program accepted (characters of source). */
export const MAX_PROGRAM_CHARS = 64 * 1024;
/** Default budget of bridged tool calls per program. */
export const DEFAULT_BRIDGE_CALL_BUDGET = 50;

const LANGUAGES: Record<string, { file: string; argv: string[] }> = {
  python: { file: '.agent/program.py', argv: ['python3', '.agent/program.py'] },
  javascript: { file: '.agent/program.js', argv: ['node', '.agent/program.js'] },
};

export interface RunProgramOptions {
  readonly execution: ExecutionEnvironment | null;
  readonly unavailableReason?: string;
  readonly workspace: SessionWorkspaceAccess;
  readonly artifacts?: ArtifactStore;
  readonly limits: ResourceLimits;
  readonly operatorCeilingSeconds: number;
  /** The host end of the bridge; null runs programs without one (no tool is reachable). */
  readonly bridge: ToolBridge | null;
  /** The tools a program of this run may call: the run's enabled tools that are bridge-callable. */
  readonly bridgedTools: (ctx: ToolExecutionContext) => readonly string[];
  /** Languages offered (default both). */
  readonly languages?: readonly string[];
  readonly callBudget?: number;
}

export const RUN_PROGRAM_SPEC: ToolSpec = {
  name: 'sandbox.run_program',
  version: '1.0.0',
  description:
    'Runs a short Python or JavaScript program in the isolated sandbox (no network, a copy of the session ' +
    'workspace, CPU/memory/process/disk/time limits). The program can call the tools listed by tools() through ' +
    'the module agent_tools (Python: `from agent_tools import call; call("math.calculate", {"expression": "2+2"})`; ' +
    'JavaScript: `const { call } = require("agent_tools"); await call(...)`), so one program can do what would ' +
    'take many tool calls. Returns exit_code, stdout, stderr, files_changed and bridge_calls. Output is untrusted.',
  inputSchema: {
    type: 'object',
    properties: {
      language: { type: 'string', description: 'python or javascript.' },
      code: { type: 'string', description: 'The program source.' },
      timeout_seconds: { type: 'number', description: 'Wall-clock limit; the effective limit may be lower.' },
    },
    required: ['language', 'code'],
    additionalProperties: false,
  },
  outputSchema: null,
  sideEffect: 'workspace_write',
  risk: 'medium',
  idempotency: 'non_idempotent',
  requiredScopes: ['tools.use'],
  timeoutSeconds: TOOL_TIMEOUT_CEILING_SECONDS + 60,
  maximumOutputBytes: 24 * 1024,
  allowParallel: false,
};

/** The bridge server's call, as the run's pipeline takes it. */
function bindCallTool(callTool: NonNullable<ToolExecutionContext['callTool']>) {
  return (c: BridgeCall) =>
    callTool({ sequence: c.sequence, toolName: c.toolName, arguments: c.arguments, signal: c.signal });
}

const refused = (errorCode: string, message: string) => ({ ok: false as const, errorCode, message });

/** Every refusal of bad input, before policy and before anything runs. */
export function normalizeRunProgram(args: Record<string, unknown>, languages: readonly string[]) {
  const language = args.language;
  if (typeof language !== 'string' || !languages.includes(language) || !(language in LANGUAGES))
    return refused('language_not_offered', `language must be one of: ${languages.join(', ')}`);
  if (typeof args.code !== 'string' || args.code.trim() === '') return refused('program_empty', 'code is empty');
  if (args.code.length > MAX_PROGRAM_CHARS)
    return refused('program_too_large', `the program has ${args.code.length} characters; at most ${MAX_PROGRAM_CHARS}`);
  const timeout = checkTimeout(args.timeout_seconds, MAX_REQUESTED_TIMEOUT_SECONDS);
  if (!timeout.ok) return refused(timeout.code, timeout.message);
  return { ok: true as const, value: { ...args } };
}

function seedFiles(language: string, code: string) {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return [
    { path: LANGUAGES[language].file, contentBase64: b64(code) },
    { path: '.agent/agent_tools.py', contentBase64: b64(PYTHON_CLIENT) },
    { path: '.agent/node_modules/agent_tools/index.js', contentBase64: b64(JAVASCRIPT_CLIENT) },
  ];
}

export function createRunProgramTool(opts: RunProgramOptions): ExtendedTool {
  const languages = opts.languages ?? ['python', 'javascript'];
  const unavailable = (message: string): ToolResult => ({
    ok: false,
    errorCode: 'sandbox_unavailable',
    message,
    retryable: false,
  });
  async function run(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolResult> {
    const execution = opts.execution!;
    const deadline = ctx.deadlineAt;
    const remaining = deadline ? (Date.parse(deadline) - ctx.clock.nowMs()) / 1000 : null;
    const timeout = effectiveTimeoutSeconds({
      requested: typeof args.timeout_seconds === 'number' ? args.timeout_seconds : undefined,
      toolCeiling: TOOL_TIMEOUT_CEILING_SECONDS,
      operatorCeiling: opts.operatorCeilingSeconds,
      remainingDeadlineSeconds: remaining,
    });
    const language = args.language as string;
    let env: EnvironmentHandle | null = null;
    let session: BridgeSession | null = null;
    try {
      session = opts.bridge
        ? await opts.bridge.open({
            runId: ctx.runId,
            sessionId: ctx.sessionId,
            tenantId: ctx.tenantId,
            principalId: ctx.principalId,
            parentInvocationId: ctx.invocationId,
            tools: opts.bridgedTools(ctx),
            callBudget: opts.callBudget ?? DEFAULT_BRIDGE_CALL_BUDGET,
            // The run loop's pipeline records and polices each call (`tool.call.*`, via: bridge).
            ...(ctx.callTool ? { invoke: bindCallTool(ctx.callTool) } : {}),
          })
        : null;
      const files = await opts.workspace.readSeed(ctx.tenantId, ctx.sessionId, MAX_SYNC_BYTES);
      env = await execution.provision({
        tenantId: ctx.tenantId,
        runId: ctx.runId,
        leaseSeconds: timeout + 60,
        limits: { ...opts.limits, wallClockSeconds: timeout },
        files: [...files.filter((f) => !f.path.startsWith('.agent/')), ...seedFiles(language, args.code as string)],
      });
      const result = await execution.execute(
        env,
        {
          argv: LANGUAGES[language].argv,
          timeoutSeconds: timeout,
          // The script's own directory (.agent) is on Python's path and holds node_modules for require().
          collectChangedUpToBytes: MAX_SYNC_BYTES,
          ...(session ? { bridge: { socketPath: session.socketPath, token: session.token } } : {}),
        },
        { signal: ctx.signal },
      );
      // Stopped (a bridged call holds the program for a human, the worker stops, the tool timed
      // out): nothing of the program's own is kept, so running it again later is safe.
      if (ctx.signal.aborted)
        return {
          ok: false,
          errorCode: 'program_stopped',
          message: 'the program was stopped before it ended; its workspace changes were not kept',
          retryable: true,
        };
      await opts.workspace.writeBack(ctx.tenantId, ctx.sessionId, result.filesChanged);
      const output = await presentResult(result, timeout, ctx, opts.artifacts, RUN_PROGRAM_SPEC.name);
      output.bridge_calls = session?.calls() ?? [];
      return { ok: true, output };
    } catch (e) {
      if (e instanceof ExecutionRequestError)
        return { ok: false, errorCode: e.code, message: e.message, retryable: false };
      return {
        ok: false,
        errorCode: 'sandbox_unavailable',
        message: e instanceof Error ? e.message : String(e),
        retryable: true,
      };
    } finally {
      await session?.close().catch(() => undefined);
      if (env) await execution.destroy(env).catch(() => undefined);
    }
  }
  return {
    spec: RUN_PROGRAM_SPEC,
    trust: 'external_untrusted',
    normalize: (args) => normalizeRunProgram(args, languages),
    execute: (args, ctx) =>
      opts.execution
        ? run(args, ctx)
        : Promise.resolve(unavailable(opts.unavailableReason ?? 'no sandbox is configured (SANDBOX_ADAPTER=none)')),
  };
}
