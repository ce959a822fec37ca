import {
  checkEnv,
  DEFAULT_ENV_ALLOWLIST,
  effectiveTimeoutSeconds,
  MAX_ARGV_ENTRIES,
} from '../../../src/domain/sandbox/request-checks';
import { createRunCommandTool, normalizeRunCommand, RUN_COMMAND_SPEC } from '../../../src/tools/sandbox/run-command';
import { ToolRegistry } from '../../../src/tools/registry';
import { loadSandboxSettings, sharedKernelRefusal } from '../../../src/config/sandbox-settings';
import { scrubbedServiceEnv } from '../../../src/adapters/sandbox';
import { splitArgv } from '../../../src/adapters/model/demo/action-requests';
import { classify } from '../../../src/adapters/sandbox/process-runner';

const norm = (args: Record<string, unknown>) => normalizeRunCommand(args, DEFAULT_ENV_ALLOWLIST);
const code = (args: Record<string, unknown>) => {
  const r = norm(args);
  return r.ok ? 'ok' : r.errorCode;
};

describe('sandbox.run_command refuses bad input before anything runs', () => {
  it('accepts an argument vector and canonicalizes the working directory', () => {
    expect(norm({ command: ['python3', '-c', 'print(1)'], working_directory: './src//lib/' })).toEqual({
      ok: true,
      value: { command: ['python3', '-c', 'print(1)'], working_directory: 'src/lib' },
    });
  });

  it.each([
    ['a shell string', { command: 'python3 -c "print(1)" && rm -rf x' }, 'shell_string_refused'],
    ['a one-element shell line', { command: ['ls -la | grep x'] }, 'shell_string_refused'],
    ['an empty vector', { command: [] }, 'invalid_command'],
    ['a non-string argument', { command: ['echo', 3] }, 'invalid_command'],
    ['an absolute working directory', { command: ['ls'], working_directory: '/etc' }, 'path_outside_workspace'],
    ['a traversing working directory', { command: ['ls'], working_directory: 'a/../../x' }, 'path_outside_workspace'],
    ['a negative timeout', { command: ['ls'], timeout_seconds: -1 }, 'invalid_timeout'],
    ['a zero timeout', { command: ['ls'], timeout_seconds: 0 }, 'invalid_timeout'],
    ['a huge timeout', { command: ['ls'], timeout_seconds: 1e9 }, 'invalid_timeout'],
    ['an unknown environment variable', { command: ['env'], env: { FOO: 'bar' } }, 'env_not_allowed'],
    ['a credential-looking variable', { command: ['env'], env: { GITHUB_TOKEN: 'x' } }, 'env_not_allowed'],
    ['the database URL', { command: ['env'], env: { DATABASE_URL: 'postgres://u:p@h/db' } }, 'env_not_allowed'],
    ['a credential value', { command: ['env'], env: { LANG: 'sk-ant-0123456789abcdefghijklmn' } }, 'env_not_allowed'],
    ['too many arguments', { command: Array.from({ length: MAX_ARGV_ENTRIES + 1 }, () => 'x') }, 'argv_too_large'],
    ['a huge argument', { command: ['echo', 'x'.repeat(9000)] }, 'argv_too_large'],
  ])('%s', (_what, args, expected) => {
    expect(code(args)).toBe(expected);
  });

  it('accepts allowlisted variables', () => {
    expect(code({ command: ['python3', 'x.py'], env: { PYTHONUNBUFFERED: '1', TZ: 'UTC' } })).toBe('ok');
  });
});

describe('the effective timeout (plan §18, ADR 0018)', () => {
  it('is the minimum of the model, tool, operator and remaining-deadline values', () => {
    expect(effectiveTimeoutSeconds({ requested: 30, toolCeiling: 300, operatorCeiling: 120 })).toBe(30);
    expect(effectiveTimeoutSeconds({ requested: 600, toolCeiling: 300, operatorCeiling: 120 })).toBe(120);
    expect(effectiveTimeoutSeconds({ toolCeiling: 300, operatorCeiling: 500 })).toBe(300);
    expect(
      effectiveTimeoutSeconds({ requested: 60, toolCeiling: 300, operatorCeiling: 120, remainingDeadlineSeconds: 7.9 }),
    ).toBe(7);
  });
});

describe('environment passthrough fails closed', () => {
  it('refuses names outside the allowlist even when the operator lists them', () => {
    expect(checkEnv({ LANG: 'C.UTF-8' }, DEFAULT_ENV_ALLOWLIST)).toEqual({ ok: true });
    expect(checkEnv({ AWS_SECRET_ACCESS_KEY: 'x' }, [...DEFAULT_ENV_ALLOWLIST, 'AWS_SECRET_ACCESS_KEY'])).toMatchObject(
      {
        ok: false,
        code: 'env_not_allowed',
      },
    );
    expect(() => loadSandboxSettings({ SANDBOX_ENV_ALLOWLIST: 'MY_API_KEY' }, '/tmp/x')).toThrow(
      /looks like a credential/,
    );
    expect(loadSandboxSettings({ SANDBOX_ENV_ALLOWLIST: 'MPLBACKEND' }, '/tmp/x').envAllowlist).toContain('MPLBACKEND');
  });

  it('launches the execution service without the database URL, provider keys or tokens', () => {
    const env = scrubbedServiceEnv({
      PATH: '/usr/bin',
      HOME: '/root',
      AGENT_DATA_DIR: '/data',
      SANDBOX_ADAPTER: 'namespace',
      AUTH_MODE: 'token',
      DATABASE_URL: 'postgres://u:p@h/db',
      OPENAI_API_KEY: 'sk-x',
      ANTHROPIC_API_KEY: 'x',
      AUTH_TOKENS_FILE: '/data/tokens.json',
      GITHUB_TOKEN: 'ghp_x',
      AWS_SECRET_ACCESS_KEY: 'x',
    });
    expect(Object.keys(env).sort()).toEqual(['AGENT_DATA_DIR', 'AUTH_MODE', 'HOME', 'PATH', 'SANDBOX_ADAPTER']);
  });
});

describe('AUTH_MODE=token refuses a shared-kernel sandbox unless overridden (plan §28.6)', () => {
  const s = (env: NodeJS.ProcessEnv) => loadSandboxSettings(env, '/tmp/x');
  it('refuses namespace, plain container and fake; accepts gVisor and the explicit override', () => {
    expect(sharedKernelRefusal(s({}), 'dev')).toBeNull();
    expect(sharedKernelRefusal(s({ SANDBOX_ADAPTER: 'namespace' }), 'token')).toMatch(/SANDBOX_ALLOW_SHARED_KERNEL=1/);
    expect(sharedKernelRefusal(s({ SANDBOX_ADAPTER: 'container' }), 'token')).toMatch(/refused/);
    expect(sharedKernelRefusal(s({ SANDBOX_ADAPTER: 'fake' }), 'token')).toMatch(/refused/);
    expect(
      sharedKernelRefusal(s({ SANDBOX_ADAPTER: 'container', SANDBOX_CONTAINER_RUNTIME: 'runsc' }), 'token'),
    ).toBeNull();
    expect(
      sharedKernelRefusal(s({ SANDBOX_ADAPTER: 'namespace', SANDBOX_ALLOW_SHARED_KERNEL: '1' }), 'token'),
    ).toBeNull();
  });
});

describe('kill reasons', () => {
  const raw = (over: Partial<Parameters<typeof classify>[0]>) => ({
    exitCode: 0,
    signal: null,
    serviceReason: null,
    stderr: Buffer.alloc(0),
    ...over,
  });
  it('maps signals, errnos and the service’s own kills', () => {
    expect(classify(raw({ exitCode: 128 + 24 }), true)).toMatchObject({
      reason: 'cpu',
      signal: 'SIGXCPU',
      exitCode: null,
    });
    expect(classify(raw({ exitCode: 128 + 25 }), true).reason).toBe('disk');
    expect(classify(raw({ exitCode: 1, stderr: Buffer.from('MemoryError\n') }), true).reason).toBe('memory');
    expect(
      classify(raw({ exitCode: 1, stderr: Buffer.from('OSError: [Errno 28] No space left on device') }), true).reason,
    ).toBe('disk');
    expect(
      classify(
        raw({ exitCode: 1, stderr: Buffer.from('BlockingIOError: [Errno 11] Resource temporarily unavailable') }),
        true,
      ).reason,
    ).toBe('pids');
    expect(
      classify(raw({ exitCode: null, signal: 'SIGKILL', serviceReason: { reason: 'timeout', detail: 'x' } }), true)
        .reason,
    ).toBe('timeout');
    expect(classify(raw({ exitCode: 3 }), true)).toMatchObject({ reason: 'exited', exitCode: 3 });
    // A program that exits 0 is never relabelled by what it printed.
    expect(classify(raw({ exitCode: 0, stderr: Buffer.from('MemoryError') }), true).reason).toBe('exited');
  });
});

describe('the demo phrasing "run <command and args>"', () => {
  it('splits on whitespace and keeps quoted spans whole', () => {
    expect(splitArgv('python3 -c print(2+2)')).toEqual(['python3', '-c', 'print(2+2)']);
    expect(splitArgv(`python3 -c "print('a b')"`)).toEqual(['python3', '-c', "print('a b')"]);
    expect(splitArgv(`echo 'x  y' z`)).toEqual(['echo', 'x  y', 'z']);
  });
});

describe('registration', () => {
  it('registers with the strict schema compiler and leaves the shell-string refusal to normalization', () => {
    const registry = new ToolRegistry();
    const tool = createRunCommandTool({
      execution: null,
      workspace: { readSeed: () => Promise.resolve([]), writeBack: () => Promise.resolve() },
      limits: loadSandboxSettings({}, '/tmp/x').limits,
      operatorCeilingSeconds: 120,
      envAllowlist: DEFAULT_ENV_ALLOWLIST,
    });
    registry.register(tool);
    expect(registry.validateArguments('sandbox.run_command', { command: ['ls', '-la'] }).ok).toBe(true);
    expect(registry.validateArguments('sandbox.run_command', { command: 'ls -la' }).ok).toBe(true);
    expect(registry.validateArguments('sandbox.run_command', { command: ['ls'], shell: true }).ok).toBe(false);
    expect(RUN_COMMAND_SPEC).toMatchObject({ sideEffect: 'workspace_write', idempotency: 'non_idempotent' });
  });
});
