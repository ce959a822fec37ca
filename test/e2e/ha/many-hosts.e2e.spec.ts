import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildSync } from 'esbuild';
import { addTokenToFile } from '../../../src/composition/http';
import { locateBinaries } from '../../../src/adapters/postgres/embedded/binaries';
import { migrateToLatest } from '../../../src/adapters/postgres/connect';
import { canMakeNamespaces, Lab, type Host } from '../../support/netns';
import { ENTRY, ensureBuilt, ROOT, waitFor, type Proc } from '../../support/processes';
import type { DriveReport } from '../../support/fleet/drive';
import { checkFleet } from '../../support/fleet/invariants';
import { FLEET_ENV } from '../../support/fleet/processes';

/**
 * Many hosts (docs/operations/ha.md): PostgreSQL, two `agent api`, three `agent worker` and the load
 * driver, each in its own network namespace joined to the database's by a veth pair; 200 calculator
 * turns through both APIs, each watched over SSE on the other API; one worker host SIGKILLed midway.
 */
const d = canMakeNamespaces('the multi-host test') ? describe : describe.skip;

const RUNS = Number(process.env.HA_MULTI_HOST_RUNS ?? 200);
let lab: Lab;
let socketDir: string;
/** AUTH_MODE=dev answers loopback only: the APIs take a bearer token from one shared token file. */
let tokensFile: string;
let token: string;

function uid(name: string): { uid: number; gid: number } {
  const u = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
}

/** PostgreSQL (the embedded package's binaries) in the hub namespace, on the bridge and a socket directory. */
async function startDatabase(hub: Host): Promise<Proc> {
  const pgUser = uid('postgres');
  const bins = locateBinaries(pgUser, () => undefined);
  const data = path.join(hub.dir, 'pgdata');
  socketDir = hub.dir;
  fs.chownSync(hub.dir, pgUser.uid, pgUser.gid);
  const init = spawnSync(
    'runuser',
    ['-u', 'postgres', '--', bins.initdb, '-D', data, '-U', 'postgres', '--auth=trust', '--no-instructions'],
    { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', LC_ALL: 'C' } },
  );
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  fs.appendFileSync(path.join(data, 'pg_hba.conf'), `host all all 10.213.0.0/24 trust\n`);
  const pg = lab.run(
    hub,
    [
      bins.postgres,
      '-D',
      data,
      '-p',
      '5432',
      '-c',
      `listen_addresses=${hub.address}`,
      '-c',
      `unix_socket_directories=${socketDir}`,
      '-c',
      'max_connections=200',
      '-c',
      'fsync=off',
    ],
    { PATH: process.env.PATH ?? '', LC_ALL: 'C' },
    'postgres',
  );
  await waitFor('PostgreSQL in the hub namespace', async () => /ready to accept connections/.test(pg.output()), 60_000);
  return pg;
}

/** The database over its socket directory (the test process is in no namespace of the lab). */
const localUrl = (db: string) => `postgres://postgres@${encodeURIComponent(socketDir)}:5432/${db}`;

function agent(host: Host, role: 'api' | 'worker', dbUrl: string): Proc {
  return lab.run(host, [process.execPath, ENTRY, role], {
    PATH: process.env.PATH ?? '',
    HOME: host.dir,
    LOG_LEVEL: 'warn',
    ...FLEET_ENV,
    DATABASE_URL: dbUrl,
    AUTH_MODE: 'token',
    AUTH_TOKENS_FILE: tokensFile,
    AGENT_DATA_DIR: host.dir,
    HOST: host.address,
    PORT: '3000',
  });
}

/** Waits until the driver reports `n` runs done; fails at once, with every process's output, if it exits first. */
async function untilDriven(drive: Proc, n: number, others: readonly Proc[]): Promise<void> {
  const end = Date.now() + 600_000;
  const done = new RegExp(`^done ${n}$`, 'm');
  while (!done.test(drive.output())) {
    if (drive.child.exitCode !== null || Date.now() > end) {
      const tail = (p: Proc) => p.output().slice(-1500);
      throw new Error([`the driver did not report ${n} runs done`, tail(drive), ...others.map(tail)].join('\n---\n'));
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(() => {
  if (!canMakeNamespaces('the multi-host test')) return;
  ensureBuilt();
  lab = Lab.create();
  tokensFile = path.join(lab.dir, 'tokens.json');
  token = addTokenToFile(tokensFile, { tenantId: 'fleet', principalId: 'driver', scopes: ['user'] }, []);
}, 120_000);
afterAll(async () => {
  await lab?.destroy();
}, 60_000);

d('two APIs and three workers on five hosts, one database', () => {
  it('completes 200 runs with a worker host SIGKILLed midway: gapless, no duplicated effect, SSE complete on the other API', async () => {
    await startDatabase(lab.hub);
    const { Client } = await import('pg');
    const c = new Client({ connectionString: localUrl('postgres') });
    await c.connect();
    await c.query('CREATE DATABASE agent_core');
    await c.end();
    await migrateToLatest(localUrl('agent_core'));
    const dbUrl = `postgres://postgres@${lab.hub.address}:5432/agent_core`;

    const apiHosts = [lab.addHost('api1'), lab.addHost('api2')];
    const workerHosts = [lab.addHost('worker1'), lab.addHost('worker2'), lab.addHost('worker3')];
    const client = lab.addHost('client');
    const apis = apiHosts.map((h) => agent(h, 'api', dbUrl));
    const workers = workerHosts.map((h) => agent(h, 'worker', dbUrl));
    const bases = apiHosts.map((h) => `http://${h.address}:3000`);

    // The driver runs in the client namespace: bundled into one file it can run from anywhere.
    const driver = path.join(lab.dir, 'drive.js');
    buildSync({
      entryPoints: [path.join(ROOT, 'test/support/fleet/drive.ts')],
      bundle: true,
      platform: 'node',
      target: 'node20',
      outfile: driver,
      logLevel: 'silent',
    });
    const drive = lab.run(
      client,
      [
        process.execPath,
        driver,
        JSON.stringify({
          apis: bases,
          token,
          runs: RUNS,
          concurrency: 16,
          runTimeoutMs: 240_000,
          // The APIs start meanwhile (under load a start takes a while); the driver waits for them.
          readyTimeoutMs: 300_000,
        }),
      ],
      { PATH: process.env.PATH ?? '' },
    );
    // Midway (80 of 200 runs finished), worker host 1 loses power: every process in its namespace is SIGKILLed.
    const midway = Math.floor((RUNS * 2) / 5);
    await untilDriven(drive, midway, [...apis, ...workers]);
    expect(lab.killHost(workerHosts[0])).toBeGreaterThan(0);
    const code = await drive.exited;
    const out = drive.output();
    expect(code).toBe(0);
    const report = JSON.parse(out.split('\n').find((l) => l.startsWith('{"runs"')) ?? '{}') as DriveReport;
    expect(report.runs).toHaveLength(RUNS);
    // Both APIs took submissions and served watchers.
    expect(new Set(report.runs.map((r) => r.submittedVia)).size).toBe(2);
    expect(report.runs.every((r) => r.watchedVia !== r.submittedVia)).toBe(true);

    const verdict = await checkFleet(localUrl('agent_core'), report.runs);
    expect(verdict).toMatchObject({
      runs: RUNS,
      completedAsExpected: RUNS,
      wrong: [],
      gappySessions: 0,
      duplicateTerminals: 0,
      duplicateEffects: 0,
      incompleteStreams: 0,
    });
    // Every worker host claimed runs before the kill; the two survivors finished what the dead one held.
    const c2 = new Client({ connectionString: localUrl('agent_core') });
    await c2.connect();
    const claimers = await c2.query<{ worker: string }>(
      `SELECT DISTINCT payload->>'workerId' AS worker FROM events WHERE event_type = 'run.claimed'`,
    );
    await c2.end();
    expect(claimers.rows).toHaveLength(3);
    console.info(
      `multi-host: ${RUNS} runs in ${report.elapsedMs} ms, ${verdict.reclaimedRuns} reclaimed after the kill, ` +
        `${report.runs.reduce((n, r) => n + r.reconnects, 0)} SSE reconnects`,
    );
  }, 900_000);
});
