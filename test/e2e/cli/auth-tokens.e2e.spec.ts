import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { agentCli, freePort } from '../../support/cli';
import { ensureBuilt, startAgent, waitFor, type Proc } from '../../support/processes';
import { createTestDb, type TestDb } from '../../support/test-db';

/**
 * ADR 0032 as an operator meets it, in real `agent` processes: `agent start` refuses AUTH_MODE=dev
 * on a non-loopback HOST; `agent auth token create --expires-in`, `list` and `revoke` against a
 * running token-mode `agent api`, which sees a revocation on its next request and re-reads the file
 * on SIGHUP (and is not ended by it).
 */
let tdb: TestDb;
let dir: string;
let api: Proc | null = null;

const tokensFile = () => path.join(dir, 'tokens.json');
const env = (extra: Record<string, string> = {}) => ({
  DATABASE_URL: tdb.url,
  AGENT_DATA_DIR: path.join(dir, 'data'),
  AUTH_TOKENS_FILE: tokensFile(),
  ...extra,
});

beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-auth-'));
}, 240_000);
afterAll(async () => {
  api?.child.kill('SIGKILL');
  await tdb?.drop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

it('AUTH_MODE=dev HOST=0.0.0.0 agent start exits non-zero, naming AUTH_MODE=token', async () => {
  const r = await agentCli(['start'], env({ AUTH_MODE: 'dev', HOST: '0.0.0.0' }));
  expect(r.code).not.toBe(0);
  expect(r.stderr).toMatch(/^error: HOST=0\.0\.0\.0 is not a loopback address.*AUTH_MODE=token/m);
  const apiAlone = await agentCli(['api'], env({ HOST: '0.0.0.0' }));
  expect(apiAlone.code).not.toBe(0);
  expect(apiAlone.stderr).toContain('AUTH_MODE=token');
}, 120_000);

it('creates tokens with an expiry, lists them, and a revocation holds from the API’s next request', async () => {
  const created = await agentCli(
    ['auth', 'token', 'create', '--tenant', 'acme', '--principal', 'ops', '--expires-in', '30d'],
    env(),
  );
  expect(created.code).toBe(0);
  expect(created.stderr).toMatch(/\(valid until \d{4}-\d\d-\d\dT[\d:.]+Z\); this token is shown only once/);
  const token = created.stdout.trim();
  const bad = await agentCli(
    ['auth', 'token', 'create', '--tenant', 'a', '--principal', 'b', '--expires-in', '2w'],
    env(),
  );
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('must be a positive number with s, m, h or d');

  const list = await agentCli(['auth', 'token', 'list', '--json'], env());
  expect(list.code).toBe(0);
  expect(list.stdout).not.toContain(token);
  const [row] = list.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { id: string; status: string; principalId: string; expiresAt: string });
  expect(row).toMatchObject({ status: 'active', principalId: 'ops', expiresAt: expect.any(String) });
  const table = await agentCli(['auth', 'token', 'list'], env());
  expect(table.stdout).toMatch(new RegExp(`^${row.id} {2}active {3}acme/ops`, 'm'));

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  api = startAgent(['api'], env({ PORT: String(port), AUTH_MODE: 'token', LOG_LEVEL: 'info' }));
  await waitFor('the API', async () => (await fetch(`${base}/health/ready`)).status === 200, 90_000).catch(
    (e: Error) => {
      throw new Error(`${e.message}\n${api?.output()}`);
    },
  );
  const sessions = () => fetch(`${base}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } });
  expect((await sessions()).status).toBe(200);

  // SIGHUP re-reads the file and leaves the API running.
  api.child.kill('SIGHUP');
  const reloaded = (line: string) => line.includes('reloaded AUTH_TOKENS_FILE') && line.includes('"reason":"SIGHUP"');
  await waitFor('the SIGHUP reload', () => Promise.resolve(api!.output().split('\n').some(reloaded))).catch(
    (e: Error) => {
      throw new Error(`${e.message}\n${api?.output()}`);
    },
  );
  expect((await sessions()).status).toBe(200);

  const revoked = await agentCli(['auth', 'token', 'revoke', row.id], env());
  expect(revoked.code).toBe(0);
  expect(revoked.stdout).toContain(`revoked token ${row.id} (acme/ops)`);
  const r = await sessions();
  expect(r.status).toBe(401);
  expect(((await r.json()) as { error: { message: string } }).error.message).toBe('the bearer token is not valid');
  const again = await agentCli(['auth', 'token', 'revoke', row.id], env());
  expect(again.stdout).toContain('was already revoked');
  const unknown = await agentCli(['auth', 'token', 'revoke', 'abcdef0123'], env());
  expect(unknown.code).toBe(3);
}, 240_000);
