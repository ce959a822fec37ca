#!/usr/bin/env node
'use strict';
/**
 * Import-layer check for src/ (docs/ARCHITECTURE.md §2). Dependency-free apart from `typescript`,
 * whose preProcessFile lists every import form: `import`, `import type`, `export ... from`,
 * dynamic `import()`, `require()` and `import x = require()`.
 *
 *   node scripts/check-layers.js                 # checks ./src
 *   node scripts/check-layers.js --root <dir>    # checks <dir>/src (fixture trees in tests)
 *
 * Exit 0 with a one-line summary when clean; exit 1 with one line per violation otherwise;
 * exit 2 on a usage or I/O error.
 *
 * The rules are the tables below. To change what a layer may import, edit LAYERS; to add a
 * folder under src/, give it a row (a file in an unlisted folder is itself reported).
 */

// ---------------------------------------------------------------------------------------------
// Rules
// ---------------------------------------------------------------------------------------------

/** `packages: ANY` means any npm package (still subject to RESTRICTED_PACKAGES). */
const ANY = '*';

/**
 * Libraries with no I/O and no framework, allowed in the core layers (runtime, context, ...).
 * `@opentelemetry/api` is the no-op-by-default tracing API; its SDK is restricted below.
 */
const PLAIN_LIBRARIES = ['ajv', 'decimal.js', 'yaml', '@opentelemetry/api'];

const CORE = ['runtime', 'context', 'policy', 'tools'];

/**
 * One row per top-level folder under src/.
 *   layers:   folders under src/ this layer may import (relative imports)
 *   packages: npm packages it may import (ANY, or a list; a list entry also allows its subpaths)
 *   builtins: whether Node builtins (`node:fs`, `fs`, ...) are allowed
 *   says:     the rule as printed in a violation
 */
const LAYERS = {
  domain: {
    layers: ['domain'],
    packages: ['decimal.js'],
    builtins: false,
    says: 'domain/ may import only domain/ and decimal.js',
  },
  ports: {
    layers: ['ports', 'domain'],
    packages: [],
    builtins: false,
    says: 'ports/ may import only domain/ (no libraries, no Node builtins)',
  },
  application: {
    layers: ['application', 'domain', 'ports'],
    packages: ['@nestjs/cqrs', '@nestjs/common', ...PLAIN_LIBRARIES],
    builtins: true,
    says: `application/ may import only domain/, ports/, @nestjs/cqrs, @nestjs/common, ${PLAIN_LIBRARIES.join(', ')} and Node builtins`,
  },
  ...Object.fromEntries(
    CORE.map((name) => [
      name,
      {
        layers: [...CORE, 'domain', 'ports'],
        packages: PLAIN_LIBRARIES,
        builtins: true,
        says: `${name}/ may import only domain/, ports/, ${CORE.filter((c) => c !== name)
          .map((c) => `${c}/`)
          .join(', ')}, ${PLAIN_LIBRARIES.join(', ')} and Node builtins`,
      },
    ]),
  ),
  adapters: {
    layers: ['adapters', 'domain', 'ports'],
    packages: ANY,
    builtins: true,
    says: 'adapters/ may import only domain/, ports/, other adapters/ and external libraries',
  },
  config: {
    layers: ['config', 'domain'],
    packages: [],
    builtins: true,
    says: 'config/ may import only domain/ and Node builtins',
  },
  ...Object.fromEntries(
    ['api', 'cli', 'dashboard'].map((name) => [
      name,
      {
        // Entry points reach adapters only through the composition root, never directly.
        layers: [name, 'application', 'domain', 'ports', 'config', 'composition'],
        packages: ANY,
        builtins: true,
        says: `${name}/ may import only application/, domain/, ports/, config/, composition/ and libraries (never adapters/ directly)`,
      },
    ]),
  ),
};

/** Composition roots: the only files that bind adapters to ports. They may import anything. */
const COMPOSITION = {
  fileNames: [/\.module\.ts$/, /^main\.ts$/],
  folders: ['composition'],
};

/** Where telemetry SDKs may be wired: adapters and the composition root (ADR 0015). */
const TELEMETRY_SDK_HOMES = ['src/adapters/', 'src/composition/'];

/**
 * Packages that may be imported only under the listed folder(s), whatever the layer (composition
 * too). A value is one folder prefix or a list of them.
 */
const RESTRICTED_PACKAGES = {
  openai: 'src/adapters/model/openai/',
  '@anthropic-ai/sdk': 'src/adapters/model/anthropic/',
  '@modelcontextprotocol/sdk': 'src/adapters/mcp/',
  '@opentelemetry/sdk-trace-node': TELEMETRY_SDK_HOMES,
  '@opentelemetry/sdk-trace-base': TELEMETRY_SDK_HOMES,
  '@opentelemetry/sdk-trace': TELEMETRY_SDK_HOMES,
  '@opentelemetry/resources': TELEMETRY_SDK_HOMES,
  '@opentelemetry/exporter-trace-otlp-http': TELEMETRY_SDK_HOMES,
  '@opentelemetry/context-async-hooks': TELEMETRY_SDK_HOMES,
  '@opentelemetry/core': TELEMETRY_SDK_HOMES,
  'prom-client': TELEMETRY_SDK_HOMES,
};

/**
 * Files outside src/ (path relative to the root) that src/ may reach by a relative import, and
 * the layer they count as.
 * Anything else outside src/ is a violation.
 */
const OUTSIDE_SRC = [
  { path: /^ormconfig(\.[cm]?[jt]s)?$/, layer: 'adapters' }, // TypeORM DataSource + migration list
  { path: /^migrations\//, layer: 'adapters' },
];

const DOC = 'ARCHITECTURE.md §2';

// ---------------------------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------------------------

const fs = require('node:fs');
const path = require('node:path');
const { builtinModules } = require('node:module');
const ts = require('typescript');

const BUILTINS = new Set(builtinModules.filter((m) => !m.startsWith('_')));

function parseArgs(argv) {
  let root = process.cwd();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--root') {
      if (!argv[i + 1]) throw new Error('--root needs a directory');
      root = argv[++i];
    } else if (a.startsWith('--root=')) {
      root = a.slice('--root='.length);
    } else if (a === '-h' || a === '--help') {
      process.stdout.write('usage: node scripts/check-layers.js [--root <dir containing src/>]\n');
      process.exit(0);
    } else {
      throw new Error(`unknown argument: ${a}`);
    }
  }
  return path.resolve(root);
}

function walk(dir, out) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else if (entry.isFile() && /\.(c|m)?tsx?$/.test(entry.name)) out.push(full);
  }
  return out;
}

const toPosix = (p) => p.split(path.sep).join('/');

/** 'pkg/sub' -> 'pkg', '@scope/pkg/sub' -> '@scope/pkg'. */
function packageName(spec) {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

function isBuiltin(spec) {
  if (spec.startsWith('node:')) return true;
  return BUILTINS.has(spec) || BUILTINS.has(packageName(spec));
}

function isComposition(relFromSrc) {
  const base = path.posix.basename(relFromSrc);
  const top = relFromSrc.split('/')[0];
  return COMPOSITION.fileNames.some((re) => re.test(base)) || COMPOSITION.folders.includes(top);
}

/** Layer of a path relative to src/ ('domain/x.ts' -> 'domain'; a file directly in src/ -> null). */
function layerOf(relFromSrc) {
  const parts = relFromSrc.split('/');
  return parts.length > 1 ? parts[0] : null;
}

const OUTSIDE = Symbol('outside src/');

/**
 * Layer a relative import lands in: a LAYERS key, 'composition', null (a file directly in src/)
 * or OUTSIDE (outside src/ and not listed in OUTSIDE_SRC).
 */
function targetLayer(rootDir, srcDir, fromFile, spec) {
  const abs = path.resolve(path.dirname(fromFile), spec);
  const relSrc = toPosix(path.relative(srcDir, abs));
  if (relSrc !== '..' && !relSrc.startsWith('../') && !path.isAbsolute(relSrc)) {
    return isComposition(relSrc) ? 'composition' : layerOf(relSrc);
  }
  const relRoot = toPosix(path.relative(rootDir, abs));
  const known = OUTSIDE_SRC.find((o) => o.path.test(relRoot));
  return known ? known.layer : OUTSIDE;
}

function check(rootDir) {
  const srcDir = path.join(rootDir, 'src');
  if (!fs.existsSync(srcDir)) throw new Error(`no src/ directory under ${rootDir}`);
  const files = walk(srcDir, []).sort();
  const violations = [];

  for (const file of files) {
    const relSrc = toPosix(path.relative(srcDir, file));
    const shown = `src/${relSrc}`;
    const composition = isComposition(relSrc);
    const layer = composition ? null : layerOf(relSrc);
    const rule = layer ? LAYERS[layer] : null;

    if (!composition && !rule) {
      const why = layer
        ? `${layer}/ is in no known layer; add it to LAYERS in scripts/check-layers.js`
        : 'only composition files (*.module.ts, main.ts) may sit directly in src/';
      violations.push(`${shown} is not in a layer — ${why} (${DOC})`);
      continue;
    }

    const text = fs.readFileSync(file, 'utf8');
    const { importedFiles } = ts.preProcessFile(text, true, true);
    const seen = new Set();
    for (const { fileName: spec } of importedFiles) {
      if (seen.has(spec)) continue;
      seen.add(spec);
      const report = (why) => violations.push(`${shown} imports "${spec}" — ${why} (${DOC})`);

      if (spec.startsWith('.') || path.isAbsolute(spec)) {
        if (composition) continue;
        const target = targetLayer(rootDir, srcDir, file, spec);
        if (target === OUTSIDE) report(`it resolves outside src/; ${rule.says}`);
        else if (!target || !rule.layers.includes(target)) report(rule.says);
        continue;
      }

      if (isBuiltin(spec)) {
        if (!composition && !rule.builtins) report(rule.says);
        continue;
      }

      const pkg = packageName(spec);
      const restricted = RESTRICTED_PACKAGES[pkg];
      const onlyUnder = restricted === undefined ? null : [].concat(restricted);
      if (onlyUnder && !onlyUnder.some((prefix) => shown.startsWith(prefix))) {
        report(`"${pkg}" may be imported only under ${onlyUnder.join(' or ')}`);
        continue;
      }
      if (composition || rule.packages === ANY) continue;
      if (!rule.packages.includes(pkg)) report(rule.says);
    }
  }
  return { files: files.length, violations };
}

function main() {
  let result;
  try {
    result = check(parseArgs(process.argv.slice(2)));
  } catch (e) {
    process.stderr.write(`check-layers: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(2);
  }
  const { files, violations } = result;
  for (const v of violations) process.stderr.write(`${v}\n`);
  const summary = `layers: ${files} files checked, ${violations.length} violation${violations.length === 1 ? '' : 's'}`;
  if (violations.length > 0) {
    process.stderr.write(`${summary}\n`);
    process.exit(1);
  }
  process.stdout.write(`${summary}\n`);
}

if (require.main === module) main();

module.exports = { check, LAYERS, RESTRICTED_PACKAGES, COMPOSITION, OUTSIDE_SRC };
