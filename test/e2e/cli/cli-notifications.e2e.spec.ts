import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { agentCli } from '../../support/cli';
import { ensureBuilt } from '../../support/processes';
import { createTestDb, type TestDb } from '../../support/test-db';

/**
 * `agent notifications prefs` as a user types it, in real `agent` processes over a real database
 * (issue 31 item 4): shows the defaults, changes a kind's channel, the content level and the quiet
 * hours, refuses bad input with exit 2 changing nothing, clears the quiet hours, and keeps principals
 * apart.
 */
let tdb: TestDb;
let dir: string;

beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-notify-'));
}, 240_000);
afterAll(async () => {
  await tdb?.drop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const agent = (args: string[]) =>
  agentCli(['notifications', 'prefs', ...args], { DATABASE_URL: tdb.url, AGENT_DATA_DIR: path.join(dir, 'data') });
const json = async (args: string[] = []) => {
  const r = await agent([...args, '--json']);
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(r.stdout) as { kinds: Record<string, string>; content: string; quiet_hours: unknown };
};

describe('agent notifications prefs', () => {
  it('shows the defaults: every kind both, content-free, no quiet hours', async () => {
    const r = await agent([]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('notification preferences of local/local-user');
    expect(r.stdout).toMatch(/approval\.requested\s+both/);
    expect(r.stdout).toContain('content                none (content-free)');
    expect(r.stdout).toContain('quiet hours            none');
  });

  it('changes a channel, the content and the quiet hours, and keeps the rest', async () => {
    const p = await json([
      '--set',
      'approval.requested=webhook',
      '--set',
      'run.failed=none',
      '--content',
      'full',
      '--quiet',
      '22:00-07:00',
      '--zone',
      'Europe/Berlin',
    ]);
    expect(p.kinds).toMatchObject({
      'approval.requested': 'webhook',
      'run.failed': 'none',
      'approval.expired': 'both',
    });
    expect(p).toMatchObject({ content: 'full', quiet_hours: { start: '22:00', end: '07:00', zone: 'Europe/Berlin' } });
    expect(await json()).toEqual(p);
    const shown = await agent([]);
    expect(shown.stdout).toContain('22:00-07:00 Europe/Berlin (webhooks wait; the inbox does not)');
  }, 180_000);

  it('refuses bad input with exit 2 and changes nothing', async () => {
    const before = await json();
    for (const args of [
      ['--set', 'approval.requested=email'],
      ['--set', 'approval.requested'],
      ['--content', 'most'],
      ['--quiet', '22:00-07:00', '--zone', 'Nowhere/Land'],
      ['--quiet', '10pm-7am'],
    ]) {
      const r = await agent(args);
      expect({ args, code: r.code, error: r.stderr.startsWith('error: ') }).toEqual({ args, code: 2, error: true });
    }
    expect(await json()).toEqual(before);
  }, 300_000);

  it('clears the quiet hours, and another principal keeps its own preferences', async () => {
    expect((await json(['--clear-quiet'])).quiet_hours).toBeNull();
    const other = await json(['--principal', 'bob', '--tenant', 'acme']);
    expect(other).toMatchObject({ content: 'none', quiet_hours: null });
    expect(other.kinds['approval.requested']).toBe('both');
  }, 180_000);
});
