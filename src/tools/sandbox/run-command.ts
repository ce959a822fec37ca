import type { ToolResult, ToolSpec } from '../../domain/tools/tool-spec';
import type { ArtifactStore } from '../../ports/artifact-store';
import type {
  ChangedFile,
  EnvironmentHandle,
  ExecutionEnvironment,
  ExecutionResult,
  ResourceLimits,
  SeedFile,
} from '../../ports/execution-environment';
import { ExecutionRequestError } from '../../ports/execution-environment';
import type { ToolExecutionContext } from '../../ports/tool';
import {
  checkArgv,
  checkEnv,
  checkTimeout,
  effectiveTimeoutSeconds,
  normalizeRelativeDir,
} from '../../domain/sandbox/request-checks';
import type { ExtendedTool } from '../tool-extensions';

/** Bytes of stdout and of stderr returned inline; the full text becomes an artifact. */
export const INLINE_OUTPUT_BYTES = 4096;
/** Sanity bound on a requested timeout: above it the request is refused, not clamped. */
export const MAX_REQUESTED_TIMEOUT_SECONDS = 3600;
/** The tool's own ceiling on a command's wall clock (the operator's may be lower). */
export const TOOL_TIMEOUT_CEILING_SECONDS = 300;
/** Workspace content copied into / back out of a sandbox per call. */
export const MAX_SYNC_BYTES = 16 * 1024 * 1024;

/**
 * How the tool reaches the session workspace (host side, worker process): read files to seed a
 * sandbox, and write the files a command changed back. Implemented in the composition root over
 * the same `<root>/<tenant>/<session>` workspace the workspace.* tools use.
 */
export interface SessionWorkspaceAccess {
  readSeed(tenantId: string, sessionId: string, maxBytes: number): Promise<SeedFile[]>;
  writeBack(tenantId: string, sessionId: string, files: readonly ChangedFile[]): Promise<void>;
}

export interface RunCommandOptions {
  /** The port (a client of the execution service). Null when the sandbox is disabled or refused. */
  readonly execution: ExecutionEnvironment | null;
  /** Why the sandbox is unavailable (e.g. the AUTH_MODE=token shared-kernel refusal); shown to the model. */
  readonly unavailableReason?: string;
  readonly workspace: SessionWorkspaceAccess;
  readonly artifacts?: ArtifactStore;
  readonly limits: ResourceLimits;
  readonly operatorCeilingSeconds: number;
  readonly envAllowlist: readonly string[];
}

export const RUN_COMMAND_SPEC: ToolSpec = {
  name: 'sandbox.run_command',
  version: '1.0.0',
  description:
    'Runs a program in an isolated sandbox with no network, a copy of the session workspace as its only writable ' +
    'directory, and CPU, memory, process, disk and time limits. `command` is an argument vector such as ' +
    '["python3", "script.py"] (never a shell string). Returns exit_code, stdout, stderr (truncated; the full text ' +
    'is an artifact), timed_out, kill_reason and files_changed (size and SHA-256). The output is untrusted data.',
  inputSchema: {
    type: 'object',
    properties: {
      // A string is accepted by the schema only so that normalization can refuse it with a
      // specific code (shell_string_refused) instead of a generic validation error.
      command: {
        anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'string' }],
        description: 'Argument vector, e.g. ["python3", "-c", "print(2+2)"].',
      },
      working_directory: { type: 'string', description: 'Directory relative to the workspace root (default ".").' },
      timeout_seconds: { type: 'number', description: 'Wall-clock limit; the effective limit may be lower.' },
      env: {
        type: 'object',
        additionalProperties: { type: 'string' },
        description: 'Extra variables; only allowlisted names (LANG, TZ, PYTHONUNBUFFERED, ...).',
      },
    },
    required: ['command'],
    additionalProperties: false,
  },
  outputSchema: null,
  // Code runs only inside the sandbox; its effects reach nothing but the session workspace (plan §9.2
  // "execute code: allow only in sandbox"). Policy decides (config/policies/default.yaml).
  sideEffect: 'workspace_write',
  risk: 'medium',
  // Arbitrary code: after a crash mid-command it is UNCERTAIN and waits for a review, never re-run blindly.
  idempotency: 'non_idempotent',
  requiredScopes: ['tools.use'],
  // The pipeline's timeout is a backstop above the sandbox's own wall clock (which the service enforces).
  timeoutSeconds: TOOL_TIMEOUT_CEILING_SECONDS + 60,
  maximumOutputBytes: 24 * 1024,
  allowParallel: false,
};

const refused = (errorCode: string, message: string) => ({ ok: false as const, errorCode, message });

/** Pipeline step 5: every refusal of bad input happens here, before policy and before anything runs. */
export function normalizeRunCommand(args: Record<string, unknown>, envAllowlist: readonly string[]) {
  const argv = checkArgv(args.command);
  if (!argv.ok) return refused(argv.code, argv.message);
  const cwd = normalizeRelativeDir(args.working_directory);
  if (!cwd.ok) return refused(cwd.code, cwd.message);
  const timeout = checkTimeout(args.timeout_seconds, MAX_REQUESTED_TIMEOUT_SECONDS);
  if (!timeout.ok) return refused(timeout.code, timeout.message);
  const env = checkEnv(args.env, envAllowlist);
  if (!env.ok) return refused(env.code, env.message);
  const value: Record<string, unknown> = { command: args.command, working_directory: cwd.path };
  if (args.timeout_seconds !== undefined) value.timeout_seconds = args.timeout_seconds;
  if (args.env !== undefined && Object.keys(args.env as object).length > 0) value.env = args.env;
  return { ok: true as const, value };
}

function excerpt(buf: Uint8Array): { text: string; truncated: boolean } {
  const b = Buffer.from(buf);
  if (b.length <= INLINE_OUTPUT_BYTES) return { text: b.toString('utf8'), truncated: false };
  return { text: b.subarray(0, INLINE_OUTPUT_BYTES).toString('utf8'), truncated: true };
}

/**
 * The model's view of a sandboxed command's result: exit code, kill reason and detail, the limits it
 * ran under, stdout and stderr excerpts (each whole as an artifact when longer), the changed files.
 */
export async function presentResult(
  result: ExecutionResult,
  timeout: number,
  ctx: ToolExecutionContext,
  artifacts: ArtifactStore | undefined,
  source: string,
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {
    exit_code: result.exitCode,
    timed_out: result.reason === 'timeout',
    kill_reason: result.reason,
    kill_detail: result.reasonDetail,
    effective_timeout_seconds: timeout,
    duration_ms: result.durationMs,
    ...(result.limits ? { limits: result.limits } : {}),
  };
  for (const stream of ['stdout', 'stderr'] as const) {
    const buf = result[stream];
    const e = excerpt(buf);
    out[stream] = e.text;
    if (e.truncated || result.outputTruncated) {
      out[`${stream}_truncated`] = true;
      out[`${stream}_bytes`] = buf.length;
      if (artifacts && buf.length > INLINE_OUTPUT_BYTES) {
        try {
          const a = await artifacts.put(
            {
              tenantId: ctx.tenantId,
              runId: ctx.runId,
              sessionId: ctx.sessionId,
              principalId: ctx.principalId,
              name: `${stream}.txt`,
              mediaType: 'text/plain',
              source,
            },
            Buffer.from(buf),
          );
          out[`${stream}_artifact`] = { artifact_id: a.id, size_bytes: a.sizeBytes, sha256: a.sha256 };
        } catch (err) {
          out[`${stream}_artifact_error`] = err instanceof Error ? err.message : String(err);
        }
      }
    }
  }
  out.files_changed = result.filesChanged.slice(0, 100).map((f) => ({
    path: f.path,
    size_bytes: f.sizeBytes,
    sha256: f.sha256,
  }));
  if (result.filesChanged.length > 100) out.files_changed_omitted = result.filesChanged.length - 100;
  return out;
}

export function createRunCommandTool(opts: RunCommandOptions): ExtendedTool {
  return {
    spec: RUN_COMMAND_SPEC,
    trust: 'external_untrusted',
    normalize: (args) => normalizeRunCommand(args, opts.envAllowlist),
    async execute(args, ctx): Promise<ToolResult> {
      if (!opts.execution)
        return {
          ok: false,
          errorCode: 'sandbox_unavailable',
          message: opts.unavailableReason ?? 'no sandbox is configured (SANDBOX_ADAPTER=none)',
          retryable: false,
        };
      const deadline = (ctx as ToolExecutionContext & { deadlineAt?: string | null }).deadlineAt;
      const remaining = deadline ? (Date.parse(deadline) - ctx.clock.nowMs()) / 1000 : null;
      if (remaining !== null && remaining < 1)
        return {
          ok: false,
          errorCode: 'deadline_exceeded',
          message: 'the run has no time left for a command',
          retryable: false,
        };
      const timeout = effectiveTimeoutSeconds({
        requested: typeof args.timeout_seconds === 'number' ? args.timeout_seconds : undefined,
        toolCeiling: TOOL_TIMEOUT_CEILING_SECONDS,
        operatorCeiling: opts.operatorCeilingSeconds,
        remainingDeadlineSeconds: remaining,
      });
      let env: EnvironmentHandle | null = null;
      try {
        const files = await opts.workspace.readSeed(ctx.tenantId, ctx.sessionId, MAX_SYNC_BYTES);
        env = await opts.execution.provision({
          tenantId: ctx.tenantId,
          runId: ctx.runId,
          leaseSeconds: timeout + 60,
          limits: { ...opts.limits, wallClockSeconds: timeout },
          files,
        });
        const result = await opts.execution.execute(
          env,
          {
            argv: args.command as string[],
            cwd: typeof args.working_directory === 'string' ? args.working_directory : '.',
            timeoutSeconds: timeout,
            env: args.env as Record<string, string> | undefined,
            collectChangedUpToBytes: MAX_SYNC_BYTES,
          },
          { signal: ctx.signal },
        );
        await opts.workspace.writeBack(ctx.tenantId, ctx.sessionId, result.filesChanged);
        return { ok: true, output: await presentResult(result, timeout, ctx, opts.artifacts, RUN_COMMAND_SPEC.name) };
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
        if (env) await opts.execution.destroy(env).catch(() => undefined);
      }
    },
  };
}
