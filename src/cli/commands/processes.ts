import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import type { Command } from 'commander';
import { migrateToLatest, openDatabase, serviceLogger } from '../../composition/infrastructure';
import { assertAuthPosture } from '../../config/auth-posture';
import { loadDotEnv, loadSettings } from '../../config/settings';
import { loadScheduleSettings } from '../../config/schedule-settings';
import { startSandboxService } from '../../composition/sandbox-supervisor';
import { EXIT, exitCodeFor } from '../exit-codes';
import { announceApi } from '../running-api';

function fail(e: unknown): never {
  process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(exitCodeFor(e));
}

/** Resolves on the first SIGTERM or SIGINT. */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
}

/*
 * The platform, HTTP and telemetry modules (Nest, TypeORM, the SDKs: ~2 s of CPU to load) are
 * required by the api and worker processes only, never by `agent start`'s supervisor (ADR 0028).
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const platformModule = () => require('../../composition/platform') as typeof import('../../composition/platform');
const httpModule = () => require('../../composition/http') as typeof import('../../composition/http');
const telemetryModule = () => require('../../composition/telemetry') as typeof import('../../composition/telemetry');
/* eslint-enable @typescript-eslint/no-require-imports */

async function runApi(): Promise<void> {
  // Listening from the start: a SIGTERM that arrives while the process is still starting stops it
  // cleanly once started, instead of killing it mid-start (the default action).
  const signalled = untilSignal();
  loadDotEnv();
  const settings = loadSettings();
  assertAuthPosture(settings);
  const platform = await platformModule().createPlatform(settings, { service: 'api' });
  const app = await httpModule().createHttpApp(platform);
  await app.listen(settings.port, settings.host);
  const url = `http://${settings.host}:${settings.port}`;
  // `agent run` on this data directory finds us here and talks HTTP instead of building a platform.
  const withdraw = announceApi(settings.dataDir, url, settings.authMode);
  platform.log.info('api listening', { url, dataDir: settings.dataDir });
  process.stderr.write(`agent-core API listening on ${url}\n`);
  await signalled;
  withdraw();
  await app.close();
  await platform.close();
  process.exit(EXIT.ok);
}

async function runWorker(): Promise<void> {
  const signalled = untilSignal(); // from the start, as in runApi
  loadDotEnv();
  const settings = loadSettings();
  const { startWorkerMetricsServer, workerMetricsPort } = telemetryModule();
  const metricsPort = workerMetricsPort(process.env); // refused before anything starts when malformed
  const platform = await platformModule().createPlatform(settings, { service: 'worker' });
  const worker = platform.createWorker();
  await worker.start();
  const metricsServer = await startWorkerMetricsServer(
    platform.metrics,
    { host: settings.host, port: metricsPort },
    platform.log,
  );
  process.stderr.write(
    `agent-core worker ${worker.settings.workerId} running (concurrency ${worker.settings.concurrency})\n`,
  );
  await signalled;
  await worker.stop();
  await metricsServer?.close();
  await platform.close();
  process.exit(EXIT.ok);
}

/** `agent scheduler`: fires due schedules as durable runs (ADR 0034); any number may run. */
async function runScheduler(): Promise<void> {
  const signalled = untilSignal(); // from the start, as in runApi
  loadDotEnv();
  const settings = loadSettings();
  const platform = await platformModule().createPlatform(settings, { service: 'scheduler' });
  const scheduler = platform.schedules.createScheduler();
  await scheduler.start();
  process.stderr.write(`agent-core scheduler running (pid ${process.pid})\n`);
  await signalled;
  await scheduler.stop();
  await platform.close();
  process.exit(EXIT.ok);
}

/**
 * `agent start`: owns the database (embedded when DATABASE_URL is unset), migrates once, then runs
 * the API and the worker as separate child processes, restarting a child that dies. SIGTERM stops
 * the children, then the embedded PostgreSQL.
 */
async function runStart(): Promise<void> {
  // Listening before anything starts: the API can answer /health/ready while the supervisor still
  // waits for the execution service, and a SIGTERM then must stop the children and the embedded
  // PostgreSQL, not kill the supervisor with the default action and orphan them.
  const signalled = untilSignal();
  loadDotEnv();
  const settings = loadSettings();
  assertAuthPosture(settings);
  const log = serviceLogger(settings, 'supervisor');
  const handle = await openDatabase(settings, (l) => log.info(l));
  let stopping = false;
  const children = new Map<string, ChildProcess>();
  const entry = path.join(__dirname, '..', '..', 'main.js'); // dist/src/main.js
  const launch = (role: 'api' | 'worker' | 'scheduler', restarts = 0): void => {
    const child = spawn(process.execPath, [entry, role], {
      stdio: 'inherit',
      // SANDBOX_AUTOSTART=0: the supervisor owns the one execution service (see sandbox-supervisor.ts).
      env: { ...process.env, DATABASE_URL: handle.url, SANDBOX_AUTOSTART: '0' },
    });
    children.set(role, child);
    child.once('exit', (code, signal) => {
      children.delete(role);
      if (stopping) return;
      const delay = Math.min(10_000, 500 * 2 ** restarts);
      log.error(`${role} exited unexpectedly; restarting`, { code, signal, delayMs: delay });
      setTimeout(() => launch(role, restarts + 1), delay);
    });
  };
  const shutdown = async () => {
    stopping = true;
    await Promise.all(
      [...children.values()].map(
        (c) =>
          new Promise<void>((resolve) => {
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
            setTimeout(() => c.kill('SIGKILL'), 20_000).unref();
          }),
      ),
    );
    await sandboxd?.stop();
    await handle.close();
    process.stderr.write('agent-core stopped\n');
    process.exit(EXIT.ok);
  };
  try {
    await migrateToLatest(handle.url);
  } catch (e) {
    await handle.close();
    throw e;
  }
  const where = handle.embedded
    ? `embedded PostgreSQL in ${handle.embedded.dataDir} (port ${handle.embedded.port})`
    : 'DATABASE_URL';
  process.stderr.write(
    `agent-core starting: API on http://${settings.host}:${settings.port}, worker beside it; data: ${where}\n`,
  );
  // The execution service (scrubbed environment: no DATABASE_URL, keys or tokens) starts beside the
  // API; the worker starts once it listens (or after 60 s), so it finds it on its socket; docs/sandbox.md.
  const sandboxd = startSandboxService(settings, entry, log, () => stopping);
  // SIGHUP re-reads AUTH_TOKENS_FILE in the API (ADR 0032); the supervisor passes it on, and is not ended by it.
  process.on('SIGHUP', () => children.get('api')?.kill('SIGHUP'));
  launch('api');
  const first = await Promise.race([(sandboxd?.ready ?? Promise.resolve()).then(() => 'ready' as const), signalled]);
  if (first === 'ready') {
    launch('worker');
    // The scheduler (ADR 0034) decides when schedules fire; AGENT_SCHEDULER_ENABLED=0 leaves it out.
    if (loadScheduleSettings().schedulerEnabled) launch('scheduler');
    await signalled;
  }
  await shutdown();
}

export function registerProcessCommands(program: Command): void {
  program
    .command('start')
    .description('run the API and a worker as separate processes (embedded PostgreSQL when DATABASE_URL is unset)')
    .action(() => runStart().catch(fail));
  program
    .command('api')
    .description('run the HTTP API')
    .action(() => runApi().catch(fail));
  program
    .command('worker')
    .description('run a worker that claims and executes runs')
    .action(() => runWorker().catch(fail));
  program
    .command('scheduler')
    .description('run a scheduler that fires due schedules as durable runs')
    .action(() => runScheduler().catch(fail));
  program
    .command('migrate')
    .description('apply pending database migrations')
    .action(() =>
      (async () => {
        loadDotEnv();
        const settings = loadSettings();
        const handle = await openDatabase(settings, (l) => process.stderr.write(`${l}\n`));
        try {
          const applied = await migrateToLatest(handle.url);
          process.stdout.write(
            applied.length ? `applied: ${applied.join(', ')}\n` : 'database is at the latest migration\n',
          );
        } finally {
          await handle.close();
        }
        process.exit(EXIT.ok);
      })().catch(fail),
    );
}
