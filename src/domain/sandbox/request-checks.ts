/**
 * Pure checks of a sandbox request, shared by `sandbox.run_command` (refusal before anything runs)
 * and the execution service (which re-checks: it trusts no caller). ADR 0018.
 */

export const MAX_ARGV_ENTRIES = 256;
export const MAX_ARG_CHARS = 8192;
export const MAX_ARGV_TOTAL_CHARS = 64 * 1024;
export const MAX_ENV_ENTRIES = 32;
export const MAX_ENV_VALUE_CHARS = 4096;

/**
 * Variables a sandbox may be given. Anything else is refused (fail closed): a name not listed here
 * is `env_not_allowed` even when it looks harmless. Operators may add names with
 * `SANDBOX_ENV_ALLOWLIST`, but never a name that looks like a credential.
 */
export const DEFAULT_ENV_ALLOWLIST: readonly string[] = [
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TERM',
  'NO_COLOR',
  'COLUMNS',
  'LINES',
  'SOURCE_DATE_EPOCH',
  'PYTHONUNBUFFERED',
  'PYTHONDONTWRITEBYTECODE',
  'PYTHONHASHSEED',
  'PYTHONIOENCODING',
];

/** Names that look like a credential or platform configuration: never passed, even if allowlisted. */
const CREDENTIAL_NAME =
  /(KEY|TOKEN|SECRET|PASS(WORD|WD)?|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|CERT|DSN|DATABASE|_URL$|^PG|^AWS_|^GCP_|^GOOGLE_|^AZURE_|^OPENAI|^ANTHROPIC|^OPENROUTER|^GITHUB_|^GH_|^NPM_|^DOCKER_|^KUBE|^SSH_|^AGENT_|^LD_|^NODE_OPTIONS$)/i;
/** Values that look like a credential (provider keys, cloud keys, private keys, bearer tokens). */
const CREDENTIAL_VALUE =
  /(\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|xox[abposr]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16})\b|-----BEGIN [A-Z ]*PRIVATE KEY-----|\bBearer\s+[A-Za-z0-9._~+/-]{16,}|:\/\/[^/\s:@]+:[^/\s@]+@)/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]{0,63}$/;

export type RequestCheck =
  { readonly ok: true } | { readonly ok: false; readonly code: string; readonly message: string };

const OK: RequestCheck = { ok: true };
const refuse = (code: string, message: string): RequestCheck => ({ ok: false, code, message });

export function looksLikeCredentialName(name: string): boolean {
  return CREDENTIAL_NAME.test(name);
}

/** Every name must be allowlisted, none may look like a credential, no value may look like a secret. */
export function checkEnv(env: unknown, allowlist: readonly string[]): RequestCheck {
  if (env === undefined || env === null) return OK;
  if (typeof env !== 'object' || Array.isArray(env)) return refuse('env_not_allowed', 'env must be an object');
  const entries = Object.entries(env as Record<string, unknown>);
  if (entries.length > MAX_ENV_ENTRIES)
    return refuse('env_not_allowed', `at most ${MAX_ENV_ENTRIES} environment variables may be passed`);
  const allowed = new Set(allowlist);
  for (const [name, value] of entries) {
    if (!ENV_NAME.test(name)) return refuse('env_not_allowed', `${JSON.stringify(name)} is not a valid variable name`);
    if (looksLikeCredentialName(name))
      return refuse('env_not_allowed', `${name} looks like a credential and is never passed into a sandbox`);
    if (!allowed.has(name))
      return refuse(
        'env_not_allowed',
        `${name} is not on the sandbox environment allowlist (${[...allowed].sort().join(', ')})`,
      );
    if (typeof value !== 'string') return refuse('env_not_allowed', `${name} must be a string`);
    if (value.length > MAX_ENV_VALUE_CHARS || value.includes('\0'))
      return refuse('env_not_allowed', `${name} is too long or contains a NUL byte`);
    if (CREDENTIAL_VALUE.test(value))
      return refuse('env_not_allowed', `the value of ${name} looks like a credential and is never passed`);
  }
  return OK;
}

const SHELL_META = /[;&|<>`$(){}\n*?~]/;

/**
 * An argument vector: a non-empty array of strings, bounded in count and size. A single string, or
 * a one-element vector that is visibly a shell command line, is refused as `shell_string_refused`.
 */
export function checkArgv(argv: unknown): RequestCheck {
  if (typeof argv === 'string')
    return refuse(
      'shell_string_refused',
      'command must be an argument vector such as ["python3", "script.py"], not a shell string',
    );
  if (!Array.isArray(argv) || argv.length === 0)
    return refuse('invalid_command', 'command must be a non-empty array of strings');
  if (argv.length > MAX_ARGV_ENTRIES)
    return refuse('argv_too_large', `command has ${argv.length} entries; at most ${MAX_ARGV_ENTRIES} are allowed`);
  let total = 0;
  for (const [i, a] of argv.entries()) {
    if (typeof a !== 'string') return refuse('invalid_command', `command[${i}] must be a string`);
    if (a.includes('\0')) return refuse('invalid_command', `command[${i}] contains a NUL byte`);
    if (a.length > MAX_ARG_CHARS)
      return refuse('argv_too_large', `command[${i}] is ${a.length} characters; at most ${MAX_ARG_CHARS}`);
    total += a.length;
  }
  if (total > MAX_ARGV_TOTAL_CHARS)
    return refuse('argv_too_large', `the command is ${total} characters; at most ${MAX_ARGV_TOTAL_CHARS}`);
  const first = argv[0] as string;
  if (first.trim() === '') return refuse('invalid_command', 'command[0] names no program');
  if (/\s/.test(first) || (argv.length === 1 && SHELL_META.test(first)))
    return refuse(
      'shell_string_refused',
      `command[0] ${JSON.stringify(first.slice(0, 80))} looks like a shell command line; pass each argument as its own array element`,
    );
  return OK;
}

/** A relative path inside the workspace: no absolute path, no `..`, no NUL. Returns the canonical form. */
export function normalizeRelativeDir(
  raw: unknown,
): { ok: true; path: string } | { ok: false; code: string; message: string } {
  if (raw === undefined || raw === null || raw === '') return { ok: true, path: '.' };
  if (typeof raw !== 'string') return { ok: false, code: 'path_outside_workspace', message: 'path must be a string' };
  if (raw.length > 512 || raw.includes('\0'))
    return { ok: false, code: 'path_outside_workspace', message: 'path is too long or contains a NUL byte' };
  if (raw.startsWith('/') || raw.startsWith('\\') || raw.startsWith('~') || /^[A-Za-z]:/.test(raw))
    return {
      ok: false,
      code: 'path_outside_workspace',
      message: `absolute paths are not allowed: ${JSON.stringify(raw)}`,
    };
  const segments = raw.split(/[/\\]+/).filter((s) => s !== '' && s !== '.');
  if (segments.some((s) => s === '..'))
    return {
      ok: false,
      code: 'path_outside_workspace',
      message: `path traversal ('..') is not allowed: ${JSON.stringify(raw)}`,
    };
  return { ok: true, path: segments.length ? segments.join('/') : '.' };
}

/** Refuses non-numbers, non-positive values and values above `hardMax` (a sanity bound, not the ceiling). */
export function checkTimeout(raw: unknown, hardMax: number): RequestCheck {
  if (raw === undefined) return OK;
  if (typeof raw !== 'number' || !Number.isFinite(raw))
    return refuse('invalid_timeout', 'timeout_seconds must be a number');
  if (raw <= 0) return refuse('invalid_timeout', `timeout_seconds must be positive, got ${raw}`);
  if (raw > hardMax) return refuse('invalid_timeout', `timeout_seconds ${raw} exceeds the maximum of ${hardMax}`);
  return OK;
}

/**
 * Plan §18 / ADR 0018: the effective timeout is the minimum of the model's value, the tool's
 * ceiling, the run's remaining deadline and the operator's ceiling. The model's value is the weakest
 * input and never the only one. Returns whole seconds, at least 1.
 */
export function effectiveTimeoutSeconds(input: {
  readonly requested?: number;
  readonly toolCeiling: number;
  readonly operatorCeiling: number;
  readonly remainingDeadlineSeconds?: number | null;
}): number {
  const candidates = [input.toolCeiling, input.operatorCeiling];
  if (input.requested !== undefined) candidates.push(input.requested);
  if (input.remainingDeadlineSeconds !== undefined && input.remainingDeadlineSeconds !== null)
    candidates.push(input.remainingDeadlineSeconds);
  return Math.max(1, Math.floor(Math.min(...candidates)));
}

/** Name of a bridge socket the worker makes (tool-bridge.ts): `<32 hex>.sock`, directly in the bridge directory. */
export const BRIDGE_SOCKET_NAME = /^[0-9a-f]{32}\.sock$/;

/**
 * A command's tool bridge (plan §8.5): the socket must be one the worker made in the service's own
 * bridge directory (nothing else on the host is ever bound into a sandbox) and the token a
 * 64-hex-character capability. The caller checks that the socket exists.
 */
export function checkBridge(raw: unknown, bridgeDir: string | null): RequestCheck {
  if (raw === undefined || raw === null) return { ok: true };
  const refuse = (message: string): RequestCheck => ({ ok: false, code: 'bridge_refused', message });
  if (bridgeDir === null) return refuse('this execution service offers no tool bridge');
  if (typeof raw !== 'object') return refuse('bridge must be an object');
  const b = raw as { socketPath?: unknown; token?: unknown };
  if (typeof b.token !== 'string' || !/^[0-9a-f]{64}$/.test(b.token))
    return refuse('bridge token must be 64 hex characters');
  if (typeof b.socketPath !== 'string') return refuse('bridge socketPath must be a string');
  const slash = b.socketPath.lastIndexOf('/');
  if (b.socketPath.slice(0, slash) !== bridgeDir || !BRIDGE_SOCKET_NAME.test(b.socketPath.slice(slash + 1)))
    return refuse(`bridge socket must be a <32 hex>.sock directly in ${bridgeDir}`);
  return { ok: true };
}
