#!/usr/bin/env node
'use strict';
/**
 * Committed-secret scan (ADR 0042, docs/security.md): secretlint with .secretlintrc.yaml over every
 * file git knows of in the tree (tracked, and untracked ones that are not ignored; outside a git
 * checkout, every file but dependencies, builds and databases), test fixtures included, minus
 * .secretlintignore. With paths as arguments, scans those instead (the scanner's own test,
 * test/unit/ci/secret-scan-gate.unit.spec.ts, uses that); `--no-ignore` scans them without
 * .secretlintignore (the test checks that every ignored file still carries what it is ignored for).
 * Exits non-zero when a secret is found or the scan could not run. Secrets are masked in the report.
 *
 *   node scripts/check-secrets.js [--no-ignore] [path ...]
 */
const { execFileSync, spawnSync } = require('node:child_process');
const { existsSync, readdirSync, statSync } = require('node:fs');
const { devNull } = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

/** Not the tree's own files (.gitignore): dependencies, builds, databases, logs. */
const SKIPPED_DIRS = new Set(['.git', 'node_modules', 'dist', '.data', 'coverage']);

/** Every file under `dir` but the skipped directories and `.env`/`*.log` (a tree that is not a git checkout). */
function walk(dir, rel = '') {
  const out = [];
  for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    if (SKIPPED_DIRS.has(e.name)) continue;
    const f = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...walk(dir, f));
    else if (e.isFile() && e.name !== '.env' && !e.name.endsWith('.log')) out.push(f);
  }
  return out;
}

function treeFiles() {
  let out;
  try {
    out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return walk(root);
  }
  // A tracked file deleted in the work tree is still listed; a submodule is a directory.
  return [...new Set(out.toString('utf8').split('\0'))].filter(
    (f) => f && existsSync(path.join(root, f)) && statSync(path.join(root, f)).isFile(),
  );
}

const argv = process.argv.slice(2);
const noIgnore = argv.includes('--no-ignore');
const paths = argv.filter((a) => a !== '--no-ignore');
const files = paths.length > 0 ? paths : treeFiles();
if (files.length === 0) {
  console.error('check-secrets: no files to scan');
  process.exit(2);
}
const bin = path.join(
  path.dirname(require.resolve('secretlint/package.json', { paths: [root] })),
  'bin',
  'secretlint.js',
);
const args = [
  bin,
  '--secretlintrc',
  path.join(root, '.secretlintrc.yaml'),
  '--secretlintignore',
  noIgnore ? devNull : path.join(root, '.secretlintignore'),
  '--no-glob',
  '--no-color',
  ...files,
];
const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
if (r.error) {
  console.error(`check-secrets: secretlint could not run: ${r.error.message}`);
  process.exit(2);
}
if (r.status === 0) console.log(`check-secrets: ${files.length} files scanned, no secret found`);
process.exit(r.status ?? 1);
