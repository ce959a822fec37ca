#!/usr/bin/env node
'use strict';
/**
 * Builds the web dashboard (src/dashboard/app, Preact) into dist/dashboard/:
 *   index.html, assets/app.js, assets/app.css (+ .gz of each), manifest.json (sizes).
 * No network, no CDN: everything the page needs is in those files.
 *
 *   node scripts/build-dashboard.js            # minified production bundle
 *   node scripts/build-dashboard.js --dev      # unminified, with inline source maps
 */
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const crypto = require('node:crypto');
const esbuild = require('esbuild');

const ROOT = path.resolve(__dirname, '..');
const SRC = path.join(ROOT, 'src', 'dashboard', 'app');
const OUT = path.join(ROOT, 'dist', 'dashboard');

async function main() {
  const dev = process.argv.includes('--dev');
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.mkdirSync(path.join(OUT, 'assets'), { recursive: true });
  const result = await esbuild.build({
    entryPoints: { app: path.join(SRC, 'main.tsx') },
    bundle: true,
    minify: !dev,
    sourcemap: dev ? 'inline' : false,
    format: 'iife',
    target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: path.join(OUT, 'assets'),
    loader: { '.css': 'css' },
    legalComments: 'none',
    define: { 'process.env.NODE_ENV': dev ? '"development"' : '"production"' },
    metafile: true,
    logLevel: 'warning',
  });
  const sizes = {};
  const hash = crypto.createHash('sha256');
  for (const name of ['app.js', 'app.css']) {
    const file = path.join(OUT, 'assets', name);
    if (!fs.existsSync(file)) continue;
    const body = fs.readFileSync(file);
    hash.update(body);
    const gz = zlib.gzipSync(body, { level: 9 });
    fs.writeFileSync(`${file}.gz`, gz);
    sizes[name] = { raw: body.length, gzip: gz.length };
  }
  const version = hash.digest('hex').slice(0, 12);
  const html = fs.readFileSync(path.join(SRC, 'index.html'), 'utf8').replaceAll('__VERSION__', version);
  fs.writeFileSync(path.join(OUT, 'index.html'), html);
  const htmlGz = zlib.gzipSync(Buffer.from(html), { level: 9 });
  fs.writeFileSync(path.join(OUT, 'index.html.gz'), htmlGz);
  sizes['index.html'] = { raw: Buffer.byteLength(html), gzip: htmlGz.length };
  const total = Object.values(sizes).reduce((a, s) => ({ raw: a.raw + s.raw, gzip: a.gzip + s.gzip }), {
    raw: 0,
    gzip: 0,
  });
  fs.writeFileSync(path.join(OUT, 'manifest.json'), JSON.stringify({ version, sizes, total }, null, 2) + '\n');
  if (result.errors.length) process.exit(1);
  process.stdout.write(
    `dashboard built in ${path.relative(ROOT, OUT)}: ${(total.raw / 1024).toFixed(1)} KiB raw, ${(total.gzip / 1024).toFixed(1)} KiB gzip\n`,
  );
}

main().catch((e) => {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
