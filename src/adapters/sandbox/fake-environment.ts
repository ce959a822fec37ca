import type {
  EnvironmentHandle,
  EnvironmentSpec,
  ExecutionCommand,
  ExecutionEnvironment,
  ExecutionResult,
} from '../../ports/execution-environment';
import { ExecutionRequestError } from '../../ports/execution-environment';
import { checkArgv, checkEnv, normalizeRelativeDir } from '../../domain/sandbox/request-checks';

/**
 * The `fake` adapter (plan §28.6): executes nothing. Every command "exits" 0 with stdout
 * `fake sandbox: <argv joined by spaces>\n`, no stderr and no changed files, so tests of the tool
 * and the pipeline are deterministic. It validates requests exactly like the real adapters.
 */
export class FakeExecutionEnvironment implements ExecutionEnvironment {
  readonly name = 'fake';
  private readonly live = new Map<string, EnvironmentHandle>();
  private seq = 0;
  readonly executed: { envId: string; command: ExecutionCommand }[] = [];

  constructor(private readonly envAllowlist: readonly string[]) {}

  async provision(spec: EnvironmentSpec): Promise<EnvironmentHandle> {
    const env = checkEnv(spec.env, this.envAllowlist);
    if (!env.ok) throw new ExecutionRequestError(env.code, env.message);
    const id = `00000000-0000-4000-8000-${String(++this.seq).padStart(12, '0')}`;
    const handle = {
      id,
      adapter: 'fake',
      leaseExpiresAt: new Date(Date.now() + spec.leaseSeconds * 1000).toISOString(),
    };
    this.live.set(id, handle);
    return handle;
  }

  async execute(handle: EnvironmentHandle, command: ExecutionCommand): Promise<ExecutionResult> {
    if (!this.live.has(handle.id))
      throw new ExecutionRequestError('environment_not_found', `no live environment ${handle.id}`);
    for (const c of [checkArgv(command.argv), checkEnv(command.env, this.envAllowlist)])
      if (!c.ok) throw new ExecutionRequestError(c.code, c.message);
    const cwd = normalizeRelativeDir(command.cwd);
    if (!cwd.ok) throw new ExecutionRequestError(cwd.code, cwd.message);
    this.executed.push({ envId: handle.id, command });
    return {
      exitCode: 0,
      signal: null,
      reason: 'exited',
      reasonDetail: 'exited with code 0 (fake sandbox: nothing was executed)',
      stdout: Buffer.from(`fake sandbox: ${command.argv.join(' ')}\n`),
      stderr: Buffer.alloc(0),
      outputTruncated: false,
      durationMs: 0,
      filesChanged: [],
    };
  }

  async destroy(handle: EnvironmentHandle): Promise<void> {
    this.live.delete(handle.id);
  }

  expired(nowMs: number): EnvironmentHandle[] {
    return [...this.live.values()].filter((h) => Date.parse(h.leaseExpiresAt) <= nowMs);
  }

  get liveCount(): number {
    return this.live.size;
  }
}
