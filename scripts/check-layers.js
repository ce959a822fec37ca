#!/usr/bin/env node
'use strict';
/**
 * Import-layer check for src/ (docs/adr/0027-layer-rules.md). Dependency-free apart from `typescript`,
 * whose preProcessFile lists every import form: `import`, `import type`, `export ... from`,
 * dynamic `import()`, `require()` and `import x = require()`, and whose parser reads what the
 * composition root exports.
 *
 * Besides the per-layer table it checks: no import cycle between files of src/; an adapter reaches
 * another adapter only through that adapter's public module (its index.ts); and the composition
 * root's exported surface (re-exports and the types of exported declarations, Platform included)
 * names no adapter symbol, so entry points see ports, not adapter classes.
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
    CORE.map((name) => {
      // runtime drives context, tools and policy; they never reach back into runtime (one way).
      const core = name === 'runtime' ? CORE : CORE.filter((c) => c !== 'runtime');
      return [
        name,
        {
          layers: [...core, 'domain', 'ports'],
          packages: PLAIN_LIBRARIES,
          builtins: true,
          says: `${name}/ may import only domain/, ports/, ${core
            .filter((c) => c !== name)
            .map((c) => `${c}/`)
            .join(', ')}, ${PLAIN_LIBRARIES.join(', ')} and Node builtins`,
        },
      ];
    }),
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
  '@modelcontextprotocol/client': 'src/adapters/mcp/',
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

/**
 * TEMPORARY (issue 24, core reshape): imports of another adapter's internals in files other helpers
 * are rewriting. Each goes when its owner lands; nothing may be added. `file` imports `spec`.
 */
const ADAPTER_INTERNALS_EXEMPT = [];

/**
 * TEMPORARY (issue 24, core reshape): members of Platform still typed by an adapter, each waiting
 * for a port that is being written or decided. A line of the report that starts with an entry is
 * not a violation. Nothing may be added.
 */
const COMPOSITION_SURFACE_EXEMPT = [
  // Raw SQL for the Nest read models (app.module), the CLI and storage tests: needs its own port decision.
  'src/composition/platform.ts exports Platform, whose type names adapter symbol "Database"',
  // MCP operator surface (status, start/stop, grants, cross-process control): no port yet.
  'src/composition/platform.ts exports Platform, whose type names adapter symbol "McpHub"',
  'src/composition/platform.ts exports Platform, whose type names adapter symbol "PgMcpGrants"',
  'src/composition/platform.ts exports Platform, whose type names adapter symbol "PgMcpControl"',
];

const DOC = 'docs/adr/0027-layer-rules.md';

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
  const known = new Set(files);
  const edges = new Map(files.map((f) => [f, []]));
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
        const resolved = resolveFile(srcDir, file, spec, known);
        if (resolved) edges.get(file).push(resolved);
        if (composition) continue;
        const target = targetLayer(rootDir, srcDir, file, spec);
        if (target === OUTSIDE) report(`it resolves outside src/; ${rule.says}`);
        else if (!target || !rule.layers.includes(target)) report(rule.says);
        else if (layer === 'adapters') {
          const why = adapterInternals(srcDir, relSrc, file, spec);
          if (why && !ADAPTER_INTERNALS_EXEMPT.some((x) => x.file === shown && x.spec === spec)) report(why);
        }
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
  for (const cycle of importCycles(files, edges)) {
    const shown = cycle.map((f) => `src/${toPosix(path.relative(srcDir, f))}`);
    violations.push(
      `import cycle: ${[...shown, shown[0]].join(' → ')} — files of src/ may not import each other in a circle (${DOC})`,
    );
  }
  // The composition modules entry points (api/, cli/, main.ts, ...) import: their surface is checked.
  const inComposition = (f) => layerOf(toPosix(path.relative(srcDir, f))) === 'composition';
  const surfaces = new Set();
  for (const [from, targets] of edges)
    if (!inComposition(from)) for (const t of targets) if (inComposition(t)) surfaces.add(t);
  for (const file of [...surfaces].sort()) {
    const relSrc = toPosix(path.relative(srcDir, file));
    for (const why of compositionSurface(srcDir, file)) {
      const line = `src/${relSrc} ${why}`;
      if (!COMPOSITION_SURFACE_EXEMPT.some((x) => line.startsWith(x))) violations.push(`${line} (${DOC})`);
    }
  }
  return { files: files.length, violations };
}

/** The file a relative import names (`x`, `x.ts`, `x.js` for `x.ts`, `x/index.ts`), or null. */
function resolveFile(srcDir, fromFile, spec, known) {
  const base = path.resolve(path.dirname(fromFile), spec.replace(/\.js$/, ''));
  for (const candidate of [base, `${base}.ts`, path.join(base, 'index.ts')]) if (known.has(candidate)) return candidate;
  return null;
}

/**
 * An adapter is a folder directly under src/adapters/ (or a single file there). From another
 * adapter only its public module may be imported: the folder itself or its index.ts. Why not, or null.
 */
function adapterInternals(srcDir, fromRel, fromFile, spec) {
  const targetRel = toPosix(path.relative(srcDir, path.resolve(path.dirname(fromFile), spec)));
  const [, fromAdapter] = fromRel.split('/');
  const parts = targetRel.split('/');
  if (parts[0] !== 'adapters' || parts.length < 3) return null; // a single-file adapter is its own public module
  const adapter = parts[1];
  if (adapter === fromAdapter) return null;
  if (parts.length === 3 && /^index(\.[jt]s)?$/.test(parts[2])) return null;
  return `an adapter may import another adapter only through its public module (src/adapters/${adapter}/index.ts), never its internals`;
}

/** Every strongly connected group of files (Tarjan), each as a cycle in import order. */
function importCycles(files, edges) {
  let counter = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  const visit = (v) => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const group = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || edges.get(v).includes(v)) cycles.push(cycleThrough(group, edges));
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return cycles;
}

/** One concrete cycle inside a strongly connected group, starting at its first file by name. */
function cycleThrough(group, edges) {
  const members = new Set(group);
  const start = [...group].sort()[0];
  const pathTo = new Map([[start, [start]]]);
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift();
    for (const w of edges.get(v)) {
      if (w === start) return pathTo.get(v);
      if (members.has(w) && !pathTo.has(w)) {
        pathTo.set(w, [...pathTo.get(v), w]);
        queue.push(w);
      }
    }
  }
  return [start];
}

/**
 * What a composition file exports that names an adapter: a re-export of an adapter module or of a
 * binding imported from one, or an exported declaration (interface, type, function, class, variable)
 * whose written types name one. Entry points get ports and domain types from composition, never
 * adapter classes. (Types the compiler infers are not seen: exported functions declare their types.)
 */
function compositionSurface(srcDir, file) {
  const text = fs.readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const isAdapterModule = (spec) =>
    spec.startsWith('.') &&
    toPosix(path.relative(srcDir, path.resolve(path.dirname(file), spec))).startsWith('adapters/');
  const fromAdapters = new Set();
  const problems = [];
  for (const st of sf.statements) {
    if (!ts.isImportDeclaration(st) || !isAdapterModule(st.moduleSpecifier.text) || !st.importClause) continue;
    const c = st.importClause;
    if (c.name) fromAdapters.add(c.name.text);
    if (c.namedBindings && ts.isNamespaceImport(c.namedBindings)) fromAdapters.add(c.namedBindings.name.text);
    if (c.namedBindings && ts.isNamedImports(c.namedBindings))
      for (const el of c.namedBindings.elements) fromAdapters.add(el.name.text);
  }
  const exported = (node) =>
    ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  for (const st of sf.statements) {
    if (ts.isExportDeclaration(st)) {
      if (st.moduleSpecifier && isAdapterModule(st.moduleSpecifier.text)) {
        problems.push(`re-exports "${st.moduleSpecifier.text}" — composition exports ports, not adapters`);
      } else if (!st.moduleSpecifier && st.exportClause && ts.isNamedExports(st.exportClause)) {
        for (const el of st.exportClause.elements) {
          const local = (el.propertyName ?? el.name).text;
          if (fromAdapters.has(local))
            problems.push(`re-exports adapter symbol "${local}" — composition exports ports, not adapters`);
        }
      }
      continue;
    }
    if (ts.isExportAssignment(st) || !exported(st)) continue;
    const named = st.name && ts.isIdentifier(st.name) ? st.name.text : ts.isVariableStatement(st) ? 'a variable' : '?';
    const seen = new Set();
    const visitTypes = (node, inType) => {
      const nowType = inType || ts.isTypeNode(node);
      if (nowType && ts.isIdentifier(node) && fromAdapters.has(node.text) && !seen.has(node.text)) {
        seen.add(node.text);
        problems.push(`exports ${named}, whose type names adapter symbol "${node.text}" — type it by a port`);
      }
      // Bodies and initialisers are the implementation, not the surface.
      if (ts.isBlock(node)) return;
      if (ts.isVariableDeclaration(node)) {
        if (node.type) visitTypes(node.type, true);
        return;
      }
      ts.forEachChild(node, (child) => visitTypes(child, nowType));
    };
    if (ts.isVariableStatement(st)) st.declarationList.declarations.forEach((d) => visitTypes(d, false));
    else ts.forEachChild(st, (child) => visitTypes(child, false));
  }
  return problems;
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
