import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { agentCli } from '../../support/cli';
import { ensureBuilt } from '../../support/processes';
import { createTestDb, type TestDb } from '../../support/test-db';

/**
 * `agent memory list|show|edit|forget` as a user types them (issue 30), in real `agent` processes:
 * `agent run` remembers through the offline demo model, then the memory commands read, edit and
 * forget it; bad input exits 2 and changes nothing, an unknown memory exits 3.
 */
let tdb: TestDb;
let dataDir: string;
const env = () => ({ DATABASE_URL: tdb.url, AGENT_DATA_DIR: dataDir });
const agent = (...args: string[]) => agentCli(args, env());

beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-memory-'));
}, 240_000);
afterAll(async () => {
  await tdb?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('agent memory', () => {
  let id: string;

  it('lists what `agent run` remembered', async () => {
    const run = await agent('run', 'remember that my team is called Blue Falcon');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/I'll remember that my team is called Blue Falcon \(memory [0-9a-f-]{36}\)\./);
    const list = await agent('memory', 'list', '--json');
    expect(list.code).toBe(0);
    const items = JSON.parse(list.stdout) as { id: string; statement: string; status: string }[];
    expect(items.map((m) => [m.statement, m.status])).toEqual([['my team is called Blue Falcon', 'active']]);
    id = items[0].id;
    const text = await agent('memory', 'list');
    expect(text.stdout).toContain(`${id}  team: my team is called Blue Falcon`);
  }, 120_000);

  it('shows one memory with its source event', async () => {
    const show = await agent('memory', 'show', id);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/source: user\.message\.created #\d+ of session [0-9a-f-]{36}/);
    expect((await agent('memory', 'show', '00000000-0000-4000-8000-000000000000')).code).toBe(3);
  }, 60_000);

  it('edits it, refusing bad input with exit 2', async () => {
    const bad = await agent('memory', 'edit', id, '--statement', 'x'.repeat(2001));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/2001 characters; the limit is 2000/);
    expect((await agent('memory', 'edit', id, '--sensitivity', 'top-secret')).code).toBe(2);
    expect((await agent('memory', 'edit', id)).code).toBe(2);
    const ok = await agent('memory', 'edit', id, '--statement', 'my team is called Blue Heron', '--json');
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({
      statement: 'my team is called Blue Heron',
      revision: 2,
      updatedBy: 'local-user',
    });
  }, 90_000);

  it('forgets it', async () => {
    const f = await agent('memory', 'forget', id);
    expect(f.code).toBe(0);
    expect((await agent('memory', 'list')).stdout.trim()).toBe('no memories');
    expect((await agent('memory', 'forget', id)).code).toBe(3);
  }, 60_000);
});
