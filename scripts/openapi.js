#!/usr/bin/env node
'use strict';
/**
 * Writes the document `GET /openapi.json` serves, built the way `agent api` builds it (the same
 * Nest application over a platform: DATABASE_URL, or the embedded PostgreSQL like every `agent`
 * command), without listening. `npm run lint:openapi` lints it with Redocly's recommended rules
 * (redocly.yaml); .ci/run runs that before the tests.
 *
 *   node scripts/openapi.js [--out FILE]     # default .data/openapi.json; needs `npm run build`
 */
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');

async function main() {
  const i = process.argv.indexOf('--out');
  const out = path.resolve(i > 0 ? process.argv[i + 1] : path.join(ROOT, '.data', 'openapi.json'));
  require('reflect-metadata');
  const { loadDotEnv, loadSettings } = require(path.join(ROOT, 'dist/src/config/settings'));
  const { createPlatform } = require(path.join(ROOT, 'dist/src/composition/platform'));
  const { createHttpApp, openApiDocument } = require(path.join(ROOT, 'dist/src/composition/http'));
  loadDotEnv();
  // The document does not depend on how requests are authenticated; dev mode needs no tokens file.
  const settings = { ...loadSettings(), authMode: 'dev' };
  const platform = await createPlatform(settings, { service: 'openapi', quiet: true });
  try {
    const app = await createHttpApp(platform);
    await app.init();
    const document = openApiDocument(app);
    await app.close();
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, `${JSON.stringify(document, null, 2)}\n`);
    process.stdout.write(`wrote ${path.relative(process.cwd(), out) || out}\n`);
  } finally {
    await platform.close();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
