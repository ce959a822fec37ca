import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');
export const ENTRY = path.join(ROOT, 'dist', 'src', 'main.js');

/**
 * End-to-end tests run the compiled processes; build when a build input is newer than the last
 * build (scripts/build-if-stale.js, what `npm start` runs first), so `npm start` in a test then
 * starts without building.
 */
export function ensureBuilt(): void {
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-if-stale.js')], { cwd: ROOT, stdio: 'inherit' });
}

export interface Proc {
  readonly child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts `node dist/src/main.js <args>` with a clean environment plus `env`. */
export function startAgent(args: string[], env: Record<string, string>): Proc {
  let out = '';
  const child = spawn(process.execPath, [ENTRY, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
