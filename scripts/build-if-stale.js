#!/usr/bin/env node
'use strict';
/**
 * `npm start`'s prestart: builds only when a build input changed since the last build
 * (docs/adr/0028-first-ten-minutes.md). `npm install` already builds (postinstall), so a fresh
 * clone's first `npm start` and every later one skip the ~15 s of tsc + esbuild.
 *
 *   node scripts/build-if-stale.js           # run `npm run build` when dist/ is older than its inputs
 *   node scripts/build-if-stale.js --stamp   # record that a build just finished (the build's last step)
 *
 * The stamp's mtime is the build's finish; an input newer than it (or a missing dist/) means stale.
 */
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = path.resolve(__dirname, '..');
const STAMP = path.join(ROOT, 'dist', '.build-stamp');
const ENTRY = path.join(ROOT, 'dist', 'src', 'main.js');
/** Everything `npm run build` reads (tsconfig.build.json's include, the dashboard build, the deps). */
const INPUTS = [
  'src',
  'migrations',
  'bench',
  'ormconfig.ts',
  'tsconfig.json',
  'tsconfig.build.json',
  'package-lock.json',
  'scripts/build-dashboard.js',
];

/** Files a build reads; notes beside the sources (bench/RESULTS.md, README.md files) are not. */
const BUILT = /\.(ts|tsx|js|mjs|cjs|json|css|html)$/;

/** The newest mtime under `p` (a file or a directory, walked), 0 when it does not exist. */
function newest(p) {
  let st;
  try {
    st = fs.statSync(p);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return BUILT.test(p) ? st.mtimeMs : 0;
  let max = st.mtimeMs; // a deleted or renamed file changes its directory's mtime
  for (const e of fs.readdirSync(p, { withFileTypes: true })) max = Math.max(max, newest(path.join(p, e.name)));
  return max;
}

function stale() {
  if (!fs.existsSync(ENTRY) || !fs.existsSync(STAMP)) return 'dist/ has not been built';
  const built = fs.statSync(STAMP).mtimeMs;
  const changed = INPUTS.find((i) => newest(path.join(ROOT, i)) > built);
  return changed ? `${changed} changed since the last build` : null;
}

if (process.argv.includes('--stamp')) {
  fs.mkdirSync(path.dirname(STAMP), { recursive: true });
  fs.writeFileSync(STAMP, `${new Date().toISOString()}\n`);
} else {
  const why = stale();
  if (why) {
    process.stderr.write(`agent-core: building (${why})\n`);
    const npm = process.env.npm_execpath;
    const r = npm
      ? spawnSync(process.execPath, [npm, 'run', 'build'], { cwd: ROOT, stdio: 'inherit' })
      : spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
    process.exit(r.status ?? 1);
  }
}
