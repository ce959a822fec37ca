import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

/**
 * The CI gates of issue 25 item 5 (ADR 0042): the committed-secret scan (`npm run secrets:check`,
 * scripts/check-secrets.js with .secretlintrc.yaml) and the format check, run by .ci/run before the
 * tests. The fake credentials are built at run time from pieces, so this file itself carries none.
 */
const repoRoot = path.resolve(__dirname, '../../..');

interface Scan {
  readonly status: number | null;
  readonly output: string;
  /** Reported problems per scanned file (secretlint's stylish format: the path, then one line per problem). */
  readonly problems: ReadonlyMap<string, number>;
}

function scan(...args: string[]): Scan {
  const r = spawnSync(process.execPath, ['scripts/check-secrets.js', ...args], {
    cwd: repoRoot,
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  const output = `${r.stdout}${r.stderr}`;
  const problems = new Map<string, number>();
  let current: string | null = null;
  for (const line of output.split('\n')) {
    if (/^\S/.test(line) && !line.startsWith('✖') && !line.startsWith('check-secrets:')) current = line.trim();
    else if (current && /^\s+\d+:\d+\s+error\s/.test(line)) problems.set(current, (problems.get(current) ?? 0) + 1);
  }
  return { status: r.status, output, problems };
}

const FAKES: Record<string, string> = {
  // An OpenAI project key of the current shape, and an older/test `sk-` key the preset's exact format misses.
  'openai.ts': `const key = '${'sk-'}${'proj-'}${'A1b2C3d4'.repeat(6)}';\n`,
  'openai-test-key.yaml': `api_key: ${'sk-'}${'test-'}${'0123456789abcdef'.repeat(2)}\n`,
  // An Anthropic key in the provider's format (api03, 93 characters, ending in AA).
  'anthropic.env': `ANTHROPIC_API_KEY=${'sk-'}${'ant-'}api03-${'Zz09_-'.repeat(15)}abcAA\n`,
  'bearer.sh': `curl -H 'Authorization: ${'Bear'}er ${'q7Wc2kLp9'.repeat(4)}' https://api.example.com\n`,
  'key.pem': [
    `-----BEGIN ${'RSA '}PRIVATE KEY-----`,
    'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun',
    '-----END RSA PRIVATE KEY-----',
    '',
  ].join('\n'),
};

describe('the committed-secret scan (npm run secrets:check)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'secret-scan-'));
    for (const [name, text] of Object.entries(FAKES)) writeFileSync(path.join(dir, name), text);
    writeFileSync(
      path.join(dir, 'clean.ts'),
      "// Looks close, is not a credential: a short sk- prefix, a templated bearer header, prose.\nconst h = `Bearer ${token}`;\nconst p = 'sk-short';\n",
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(Object.keys(FAKES))('reports the fake credential in %s and exits non-zero', (name) => {
    const file = path.join(dir, name);
    const r = scan(file);

    expect(r.status).toBe(1);
    expect(r.problems.get(file)).toBeGreaterThanOrEqual(1);
  });

  it('never prints the secret itself (masked output)', () => {
    const r = scan(path.join(dir, 'openai.ts'));

    expect(r.output).not.toContain('A1b2C3d4A1b2C3d4');
  });

  it('passes a file with near misses', () => {
    const r = scan(path.join(dir, 'clean.ts'));

    expect({ status: r.status, problems: [...r.problems] }).toEqual({ status: 0, problems: [] });
  });

  it('keeps each .secretlintignore entry for a file that exists and still carries what the scanner reports', () => {
    const entries = readFileSync(path.join(repoRoot, '.secretlintignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.length > 0 && !l.startsWith('#'));
    expect(entries.length).toBeGreaterThan(0);
    const r = scan('--no-ignore', ...entries);

    // A stale entry (the fake key left the file) would hide a real one added later: it must go.
    expect(entries.filter((e) => !r.problems.has(path.join(repoRoot, e)))).toEqual([]);
  });

  it('passes on the real tree (every file git knows of, test fixtures included)', () => {
    const r = scan();

    expect(r.status).toBe(0);
    expect(r.output).toMatch(/check-secrets: \d+ files scanned, no secret found/);
  }, 300_000);
});

describe('.ci/run', () => {
  const ci = readFileSync(path.join(repoRoot, '.ci/run'), 'utf8');

  it('runs the format check and the secret scan as gates after the static checks and before the tests', () => {
    const order = [
      'npm ci',
      'npm run lint',
      'npm run typecheck',
      'npm run lint:openapi',
      'npm run format:check',
      'npm run secrets:check',
      'npm test',
    ].map((c) => (ci.indexOf(`${c} `) >= 0 ? ci.indexOf(`${c} `) : ci.indexOf(`${c}\n`)));

    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  it('fails a gate with the plain summary line', () => {
    for (const gate of ['format:check', 'secrets:check']) expect(ci).toMatch(new RegExp(`gate npm run ${gate}\\n`));
    expect(ci).toMatch(/gate\(\) \{ "\$@" \|\| \{ echo "0 passed, 1 failed"; exit 1; \}; \}/);
  });
});

describe('the format gate (npm run format:check)', () => {
  it('fails on a mis-formatted file with the project configuration', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'format-gate-'));
    try {
      const bad = path.join(dir, 'bad.ts');
      writeFileSync(bad, 'export const x = {a:1,\n    b:2}\n');
      const prettier = path.join(repoRoot, 'node_modules/prettier/bin/prettier.cjs');
      const r = spawnSync(process.execPath, [prettier, '--config', '.prettierrc.json', '--check', bad], {
        cwd: repoRoot,
        encoding: 'utf8',
      });

      expect(r.status).toBe(1);
      expect(`${r.stdout}${r.stderr}`).toContain('bad.ts');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
