/**
 * Hardline rules (plan §9.3, §22): never-bypassable patterns evaluated before any configured rule.
 * They live in code, not configuration, and are deep-frozen when this module loads, so no policy
 * file, mode or in-process code can disable or edit them.
 */
export interface HardlineRule {
  readonly id: string;
  readonly category: 'destructive_command' | 'secret_exfiltration';
  readonly pattern: RegExp;
  readonly explanation: string;
}

const rules: HardlineRule[] = [
  {
    id: 'rm_rf_root',
    category: 'destructive_command',
    pattern:
      /\brm\s+(?:-[a-z]*\s+)*-[a-z]*(?:r[a-z]*f|f[a-z]*r)[a-z]*\s+(?:--no-preserve-root\s+)?(?:\/|~|\*|\$HOME)(?:\s|$)/i,
    explanation: 'recursive forced deletion of a root, home or wildcard path',
  },
  {
    id: 'mkfs',
    category: 'destructive_command',
    pattern: /\bmkfs(?:\.[a-z0-9]+)?\s/i,
    explanation: 'formatting a filesystem',
  },
  {
    id: 'dd_to_device',
    category: 'destructive_command',
    pattern: /\bdd\s+[^\n]*\bof=\/dev\//i,
    explanation: 'writing raw data to a block device',
  },
  {
    id: 'fork_bomb',
    category: 'destructive_command',
    pattern: /:\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:/,
    explanation: 'a fork bomb',
  },
  {
    id: 'drop_database',
    category: 'destructive_command',
    pattern: /\bdrop\s+(?:database|schema)\b/i,
    explanation: 'dropping a database or schema',
  },
  {
    id: 'aws_access_key',
    category: 'secret_exfiltration',
    pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/,
    explanation: 'an AWS access key id',
  },
  {
    id: 'private_key',
    category: 'secret_exfiltration',
    pattern: /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/,
    explanation: 'a private key',
  },
  {
    id: 'provider_api_key',
    category: 'secret_exfiltration',
    pattern: /\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|xox[abposr]-[A-Za-z0-9-]{10,})/,
    explanation: 'an API token',
  },
  {
    id: 'credential_files',
    category: 'secret_exfiltration',
    pattern: /(?:^|[\s"'=/])(?:\.ssh\/id_[a-z0-9]+|\/etc\/shadow|\.aws\/credentials|\.env)(?:\s|$|["'])/i,
    explanation: 'a credential file',
  },
];

export const HARDLINE_RULES: readonly HardlineRule[] = Object.freeze(rules.map((r) => Object.freeze({ ...r })));

/** Every string inside a JSON value (keys included), depth-first. */
function* stringsOf(v: unknown, depth = 0): Generator<string> {
  if (depth > 32) return;
  if (typeof v === 'string') yield v;
  else if (Array.isArray(v)) for (const x of v) yield* stringsOf(x, depth + 1);
  else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      yield k;
      yield* stringsOf(x, depth + 1);
    }
  }
}

/** The first hardline rule the arguments trip, or null. */
export function matchHardline(args: unknown): HardlineRule | null {
  for (const s of stringsOf(args)) {
    for (const rule of HARDLINE_RULES) if (rule.pattern.test(s)) return rule;
  }
  return null;
}
