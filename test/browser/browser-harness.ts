import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const ROOT = path.resolve(__dirname, '..', '..');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOTS = path.join(ROOT, 'docs', 'screenshots');
const APP_SRC = path.join(ROOT, 'src', 'dashboard', 'app');
const MANIFEST = path.join(ROOT, 'dist', 'dashboard', 'manifest.json');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

/** Builds dist/dashboard when it is missing or older than its sources (until `npm run build` does it). */
export function ensureDashboardBuilt(): { version: string; total: { raw: number; gzip: number } } {
  const built = fs.existsSync(MANIFEST) ? fs.statSync(MANIFEST).mtimeMs : 0;
  const sources = Math.max(newestMtime(APP_SRC), fs.statSync(path.join(ROOT, 'scripts', 'build-dashboard.js')).mtimeMs);
  if (built < sources) {
    execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-dashboard.js')], { cwd: ROOT, stdio: 'pipe' });
  }
  return JSON.parse(fs.readFileSync(MANIFEST, 'utf8')) as { version: string; total: { raw: number; gzip: number } };
}

export interface Browser {
  readonly ctx: BrowserContext;
  page(width?: number, height?: number): Promise<Page>;
  close(): Promise<void>;
}

/**
 * `describe`, or, when Chromium is not installed, a skipped block whose name carries the install
 * command: Chromium is optional for a developer (ADR 0028), and `.ci/run` installs it as root.
 */
export function describeWithChromium(name: string, fn: () => void): void {
  if (fs.existsSync(CHROMIUM)) return describe(name, fn);
  const why = `Chromium not found at ${CHROMIUM}; apt-get install -y chromium, or set CHROMIUM_PATH`;
  // Jest does not list the blocks of a wholly skipped file, so the reason is also said here, once per file.
  process.stderr.write(`skipping "${name}": ${why}\n`);
  describe.skip(`${name} (skipped: ${why})`, fn);
}

/** Debian Chromium, headless, fresh profile (STACK-NOTES §9). Fails loudly when it cannot start. */
export async function launchBrowser(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM}: the browser tests need it (apt-get install -y chromium, which .ci/run does as root), or set CHROMIUM_PATH`,
    );
  }
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pw-chromium-'));
  let ctx: BrowserContext;
  try {
    ctx = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 900 },
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  } catch (e) {
    fs.rmSync(userDataDir, { recursive: true, force: true });
    throw new Error(`Chromium at ${CHROMIUM} could not be launched: ${(e as Error).message}`, { cause: e });
  }
  const errors: string[] = [];
  ctx.on('weberror', (err) => errors.push(err.error().message));
  return {
    ctx,
    async page(width = 1280, height = 900) {
      const p = ctx.pages().find((x) => x.url() === 'about:blank') ?? (await ctx.newPage());
      await p.setViewportSize({ width, height });
      p.setDefaultTimeout(20_000);
      return p;
    },
    async close() {
      await ctx.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
      if (errors.length) throw new Error(`uncaught page errors: ${errors.join('; ')}`);
    },
  };
}

/** Refreshes the committed screenshots in docs/screenshots/ only when asked (UPDATE_SCREENSHOTS=1). */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.UPDATE_SCREENSHOTS !== '1') return;
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, name), fullPage: false });
}

/** Sequences of the persisted-event entries on the page (each `[data-seq]` element is one event). */
export async function domSequences(page: Page, scope = 'main'): Promise<number[]> {
  const seqs = await page.$$eval(`${scope} [data-seq]`, (els) => els.map((el) => Number(el.getAttribute('data-seq'))));
  // Sorted: chat bubbles sit beside the timeline, so DOM order is not sequence order. Equality with the
  // log (which has no duplicates) therefore means every event exactly once.
  return seqs.sort((a, b) => a - b);
}

/**
 * `domSequences` once the page has caught up with `expected` (the log's sequences), or as it stands
 * after `timeoutMs`: the page learns of the last events over SSE a moment after the database has
 * them, so a single read right after the run ends may miss the newest. Assert equality on the result.
 */
export async function settledDomSequences(
  page: Page,
  expected: readonly number[],
  scope = 'main',
  timeoutMs = 10_000,
): Promise<number[]> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const seqs = await domSequences(page, scope);
    if (seqs.length === expected.length && seqs.every((s, i) => s === expected[i])) return seqs;
    if (Date.now() > end) return seqs;
    await new Promise((r) => setTimeout(r, 100));
  }
}
