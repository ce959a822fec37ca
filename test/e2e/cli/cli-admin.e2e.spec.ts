import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { agentCli, freePort } from '../../support/cli';
import { ensureBuilt, ROOT, startAgent, waitFor, type Proc } from '../../support/processes';
import { createTestDb, type TestDb } from '../../support/test-db';
import { EVERYTHING_STDIO_MCP_YAML, MCP_AGENT, makeConfigDir } from '../../int/mcp/mcp-support';

/**
 * The operator's commands as a user types them, in real `agent` processes: `auth token create`
 * (and the tokens working against a running token-mode `agent api`), `mcp` against that API,
 * `trajectory consent` and `export`, `skills`, and `eval`.
 */

let tdb: TestDb;
let dir: string;
let config: { dir: string; remove(): void };
let base: string;
const procs: Proc[] = [];

const tokensFile = () => path.join(dir, 'tokens.json');
const env = (extra: Record<string, string> = {}) => ({
  DATABASE_URL: tdb.url,
  AGENT_DATA_DIR: path.join(dir, 'data'),
  AGENT_CONFIG_DIR: config.dir,
  ...extra,
});
const agent = (args: string[], extra: Record<string, string> = {}) => agentCli(args, env(extra));
const get = (url: string, token?: string, method = 'GET') =>
  fetch(`${base}${url}`, { method, headers: token ? { authorization: `Bearer ${token}` } : {} });

beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-admin-'));
  config = makeConfigDir(EVERYTHING_STDIO_MCP_YAML, { 'mcp_demo.yaml': MCP_AGENT });
}, 240_000);
afterAll(async () => {
  for (const p of procs) p.child.kill('SIGKILL');
  await tdb?.drop();
  config?.remove();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('agent auth token create, and agent mcp against the token-mode API', () => {
  let admin: string;

  it('prints a token once, stores only its hash, and a running API accepts it (and one created later)', async () => {
    const created = await agent(
      ['auth', 'token', 'create', '--tenant', 'acme', '--principal', 'ops', '--scopes', 'user', 'admin'],
      { AUTH_TOKENS_FILE: tokensFile() },
    );
    expect(created.code).toBe(0);
    admin = created.stdout.trim();
    expect(admin).toMatch(/^\S{32,}$/);
    expect(created.stderr).toContain(`stored the hash in ${tokensFile()}; this token is shown only once:`);
    const stored = fs.readFileSync(tokensFile(), 'utf8');
    expect(stored).not.toContain(admin);
    expect(stored).toContain(createHash('sha256').update(admin).digest('hex'));
    expect(fs.statSync(tokensFile()).mode & 0o777).toBe(0o600);

    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const api = startAgent(['api'], env({ PORT: String(port), AUTH_MODE: 'token', AUTH_TOKENS_FILE: tokensFile() }));
    procs.push(api);
    await waitFor('the API', async () => (await fetch(`${base}/health/ready`)).status === 200, 90_000).catch(
      (e: Error) => {
        throw new Error(`${e.message}\n${api.output()}`);
      },
    );
    expect((await get('/v1/sessions', admin)).status).toBe(200);
    expect((await get('/v1/sessions')).status).toBe(401);

    // Created while the API runs, with --file and a narrower scope: the API re-reads the file.
    const reader = await agent(
      ['auth', 'token', 'create', '--file', tokensFile(), '--tenant', 'acme', '--principal', 'auditor'],
      {},
    );
    expect(reader.code).toBe(0);
    await waitFor('the new token', async () => (await get('/v1/sessions', reader.stdout.trim())).status === 200);

    const noFile = await agent(['auth', 'token', 'create', '--tenant', 'acme', '--principal', 'x']);
    expect(noFile).toMatchObject({ code: 2, stdout: '' });
    expect(noFile.stderr).toContain('error: set AUTH_TOKENS_FILE or pass --file <path>');
    const noTenant = await agent(['auth', 'token', 'create', '--file', tokensFile(), '--principal', 'x']);
    expect(noTenant.code).toBe(2);
    expect(noTenant.stderr).toContain("error: required option '--tenant <tenant>' not specified");
  }, 180_000);

  it('mcp list, status and restart show and control the running API’s MCP servers', async () => {
    const asAdmin = { AGENT_API_URL: base, AGENT_API_TOKEN: admin };
    await waitFor(
      'the server to be ready',
      async () => {
        const r = await agent(['mcp', 'status', 'everything', '--json'], asAdmin);
        return r.code === 0 && (JSON.parse(r.stdout) as { state: string }).state === 'ready';
      },
      90_000,
    );
    const list = await agent(['mcp', 'list'], asAdmin);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^everything\s+stdio\s+ready\s+\S+\s+\d+ tools/);
    const status = await agent(['mcp', 'status', 'everything'], asAdmin);
    expect(status.stdout).toMatch(/^everything \(stdio\)\n {2}state {12}ready\n/);
    const restarted = await agent(['mcp', 'restart', 'everything'], asAdmin);
    expect(restarted.code).toBe(0);
    expect(restarted.stdout).toMatch(/^everything\s+stdio\s+ready\s+.*restarts \d+/);
    const unknown = await agent(['mcp', 'status', 'nope'], asAdmin);
    expect(unknown).toMatchObject({ code: 3 });
    expect(unknown.stderr).toContain('no MCP server "nope" is configured');
    const anonymous = await agent(['mcp', 'list'], { AGENT_API_URL: base });
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.stderr).toMatch(/^error: /);
    const down = await agent(['mcp', 'list'], { AGENT_API_URL: 'http://127.0.0.1:9' });
    expect(down.code).toBe(5);
    expect(down.stderr).toContain('is not reachable (start it with `agent start`)');
  }, 180_000);
});

describe('agent trajectory consent and export', () => {
  it('grants, shows and withdraws a principal’s consent; a consented run is exported', async () => {
    const show = await agent(['trajectory', 'consent', 'show', '--principal', 'local-user', '--json']);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ tenantId: 'local', principalId: 'local-user' });
    const granted = await agent(['trajectory', 'consent', 'grant']);
    expect(granted).toMatchObject({ code: 0 });
    expect(granted.stdout).toMatch(/^local\/local-user: granted \(version \d+, /);

    expect((await agent(['run', 'What is 2 to the power of 8?'])).code).toBe(0);
    const out = path.join(dir, 'export.jsonl');
    const exported = await agent(['trajectory', 'export', '--status', 'completed', '--out', out]);
    expect(exported.code).toBe(0);
    expect(exported.stderr).toMatch(/exported 1 run\(s\) \(1 succeeded, 0 failed\)/);
    const [doc] = fs
      .readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { messages: unknown[] });
    expect(JSON.stringify(doc.messages)).toContain('256');

    const withdrawn = await agent(['trajectory', 'consent', 'withdraw', '--principal', 'local-user']);
    expect(withdrawn.code).toBe(0);
    expect(withdrawn.stdout).toMatch(/^local\/local-user: withdrawn .*\ndeleted \d+ stored export\(s\)/);
    const after = await agent(['trajectory', 'export', '--out', path.join(dir, 'after.jsonl')]);
    expect(after.stderr).toMatch(/exported 0 run\(s\).*skipped 1 without consent/);
  }, 180_000);
});

describe('agent skills and agent eval', () => {
  it('skills list shows the packages; validate accepts them and refuses a broken one with exit 2', async () => {
    const list = await agent(['skills', 'list', '--json']);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'arithmetic-check', required_tools: ['math.calculate'] }),
      ]),
    );
    const valid = await agent(['skills', 'validate']);
    expect(valid).toMatchObject({ code: 0 });
    expect(valid.stdout).toMatch(/^ok {7}arithmetic-check 1\.0\.0$/m);
    const broken = path.join(dir, 'broken-skill');
    fs.mkdirSync(broken);
    fs.writeFileSync(path.join(broken, 'SKILL.md'), '---\nname: Broken Skill\n---\nno version, no description\n');
    const refused = await agent(['skills', 'validate', broken]);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toMatch(/^refused {2}.*broken-skill\n {2}- /);
  }, 120_000);

  it('eval run passes a case, fails a case that does not hold (exit 1), and refuses an unknown one (exit 2)', async () => {
    const passed = await agent(['eval', 'run', '--case', '2', '--json']);
    expect(passed.code).toBe(0);
    const report = JSON.parse(passed.stdout) as { summary: Record<string, number> };
    expect(report.summary).toMatchObject({ passed: 1, failed: 0, pending: 0 });

    const cases = path.join(dir, 'cases');
    fs.mkdirSync(cases);
    const calculator = fs.readFileSync(path.join(ROOT, 'evals', 'cases', '02_calculator_tool.yaml'), 'utf8');
    fs.writeFileSync(path.join(cases, '01_calculator_tool.yaml'), calculator.replace('- "391"', '- "392"'));
    const failed = await agent(['eval', 'run', '--dir', cases]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain('final_text_contains: "392" is not in the final text "The result is 391."');
    expect(failed.stdout.trim().split('\n').at(-1)).toBe('0 passed, 1 failed, 0 pending');

    const unknown = await agent(['eval', 'run', '--case', 'no_such_case']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no eval case matches "no_such_case"');
  }, 180_000);
});
