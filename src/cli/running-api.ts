import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Settings } from '../config/settings';

/**
 * Where a running `agent api` announces itself: `<data dir>/run/api.json` with its pid and URL.
 * `agent run` reads it to talk to that API over HTTP instead of building the whole platform
 * in-process (ADR 0028: ~2 s of requires and start-up that a one-off turn does not need). The
 * data directory is what ties a CLI to its platform, so a platform serving another data
 * directory (another checkout, another database) is never picked up by accident.
 */
export interface ApiAnnouncement {
  readonly pid: number;
  readonly url: string;
  /** The API's AUTH_MODE: a CLI without AGENT_API_TOKEN cannot use a token-mode API. */
  readonly authMode: Settings['authMode'];
}

export interface RunningApi {
  readonly base: string;
  readonly token: string | null;
}

export function apiFile(dataDir: string): string {
  return path.join(dataDir, 'run', 'api.json');
}

/** Written by `agent api` once it listens; removed when it stops. */
export function announceApi(dataDir: string, url: string, authMode: Settings['authMode']): () => void {
  const file = apiFile(dataDir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const mine: ApiAnnouncement = { pid: process.pid, url, authMode };
  fs.writeFileSync(file, `${JSON.stringify(mine)}\n`);
  return () => {
    // Only our own: a second API on the same data directory may have announced itself since.
    if (readAnnouncement(dataDir)?.pid === process.pid) fs.rmSync(file, { force: true });
  };
}

function readAnnouncement(dataDir: string): ApiAnnouncement | null {
  try {
    const a = JSON.parse(fs.readFileSync(apiFile(dataDir), 'utf8')) as Partial<ApiAnnouncement>;
    if (typeof a.pid !== 'number' || typeof a.url !== 'string') return null;
    // An announcement without a mode predates it: assume the stricter one.
    return { pid: a.pid, url: a.url, authMode: a.authMode === 'dev' ? 'dev' : 'token' };
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A listening address made dialable: a wildcard host means "this machine". */
function dialable(url: string): string {
  const u = new URL(url);
  if (u.hostname === '0.0.0.0' || u.hostname === '[::]') u.hostname = '127.0.0.1';
  return u.toString().replace(/\/$/, '');
}

/**
 * The API this CLI should use, or null to work in-process: `AGENT_API_URL` when set, otherwise the
 * live API announced in the data directory. An announced API that does not answer `/health/ready`
 * quickly is ignored (in-process still works: the CLI has the database); an API the user named in
 * `AGENT_API_URL` that does not answer is an error, never silently replaced. An announced API in
 * AUTH_MODE=token (its own mode, from the announcement: the CLI's environment may differ) is used
 * only with `AGENT_API_TOKEN`.
 */
export async function findRunningApi(
  settings: Settings,
  env: NodeJS.ProcessEnv = process.env,
): Promise<RunningApi | null> {
  const token = env.AGENT_API_TOKEN?.trim() || null;
  const named = env.AGENT_API_URL?.trim().replace(/\/$/, '');
  if (named) {
    const problem = await notReady(named);
    if (problem)
      throw new Error(`the API at ${named} (AGENT_API_URL) is not ready: ${problem}; start it or unset AGENT_API_URL`);
    return { base: named, token };
  }
  const a = readAnnouncement(settings.dataDir);
  if (!a || !isAlive(a.pid)) return null;
  if ((a.authMode === 'token' || settings.authMode === 'token') && !token) return null;
  const base = dialable(a.url);
  return (await notReady(base)) ? null : { base, token };
}

async function notReady(base: string): Promise<string | null> {
  try {
    const r = await fetch(`${base}/health/ready`, { signal: AbortSignal.timeout(1500) });
    await r.body?.cancel();
    return r.status === 200 ? null : `/health/ready answered ${r.status}`;
  } catch (e) {
    return String((e as Error).cause ?? e);
  }
}
