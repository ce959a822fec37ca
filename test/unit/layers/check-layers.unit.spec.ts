import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

const repoRoot = path.resolve(__dirname, '../../..');
const fixtures = path.join(repoRoot, 'test/fixtures/layers');

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  lines: string[];
}

function checkLayers(...args: string[]): Run {
  const r = spawnSync(process.execPath, ['scripts/check-layers.js', ...args], { cwd: repoRoot, encoding: 'utf8' });
  if (r.error) throw r.error;
  const lines = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.length > 0);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, lines };
}

describe('check-layers on a tree that breaks a rule', () => {
  it('fails and names the domain file that imports typeorm', () => {
    const run = checkLayers('--root', path.join(fixtures, 'violating'));

    expect(run.status).toBe(1);
    expect(run.lines).toEqual([
      'src/domain/bad.ts imports "typeorm" — domain/ may import only domain/ and decimal.js (docs/adr/0027-layer-rules.md)',
      'layers: 2 files checked, 1 violation',
    ]);
  });

  it('does not report the well-behaved file next to it', () => {
    const run = checkLayers('--root', path.join(fixtures, 'violating'));

    expect(run.stderr).not.toContain('good.ts');
  });
});

describe('check-layers on a tree that follows every rule', () => {
  it('exits 0 with a one-line summary', () => {
    const run = checkLayers('--root', path.join(fixtures, 'clean'));

    expect(run.status).toBe(0);
    expect(run.stdout).toBe('layers: 8 files checked, 0 violations\n');
    expect(run.stderr).toBe('');
  });
});

describe('check-layers import forms and rule kinds', () => {
  let run: Run;
  let violations: string[];
  let offenders: string[]; // each violation up to the dash: '<file> imports "<specifier>"'

  beforeAll(() => {
    run = checkLayers('--root', path.join(fixtures, 'import-forms'));
    violations = run.lines.filter((l) => !l.startsWith('layers:'));
    offenders = violations.map((l) => l.slice(0, l.indexOf(' — ')));
  });

  it('reports exactly the expected imports, one line each, and exits 1', () => {
    expect(run.status).toBe(1);
    expect([...offenders].sort()).toEqual(
      [
        'src/adapters/model/fake/provider.ts imports "../../../application/handler"',
        'src/adapters/model/fake/provider.ts imports "openai"',
        'src/api/api.module.ts imports "@anthropic-ai/sdk"',
        'src/api/controller.ts imports "../adapters/model/fake/provider"',
        'src/domain/forms.ts imports "../ports/port"',
        'src/domain/forms.ts imports "fs"',
        'src/domain/forms.ts imports "pg"',
        'src/index.ts is not in a layer',
        'src/ports/port.ts imports "node:path"',
        'src/ports/port.ts imports "rxjs"',
        'src/runtime/loop.ts imports "../../outside-src"',
        'src/runtime/loop.ts imports "../adapters/model/fake/provider.js"',
        'src/runtime/loop.ts imports "@nestjs/common"',
        'src/runtime/loop.ts imports "pg-listen"',
        'src/shared/util.ts is not in a layer',
      ].sort(),
    );
    expect(run.lines[run.lines.length - 1]).toBe('layers: 11 files checked, 15 violations');
  });

  it('sees import type, export from, import-equals, require and dynamic import', () => {
    expect(offenders).toEqual(
      expect.arrayContaining([
        'src/domain/forms.ts imports "pg"', // import type
        'src/domain/forms.ts imports "../ports/port"', // export * from
        'src/ports/port.ts imports "node:path"', // import x = require()
        'src/runtime/loop.ts imports "pg-listen"', // require()
        'src/runtime/loop.ts imports "../adapters/model/fake/provider.js"', // import()
      ]),
    );
  });

  it('lets only the named adapter folder import a provider SDK, even from a module file', () => {
    expect(offenders).not.toContain('src/adapters/model/openai/client.ts imports "openai"');
    expect(violations).toContain(
      'src/api/api.module.ts imports "@anthropic-ai/sdk" — "@anthropic-ai/sdk" may be imported only under src/adapters/model/anthropic/ (docs/adr/0027-layer-rules.md)',
    );
  });

  it('lets a module file import an adapter that a controller may not', () => {
    expect(offenders).not.toContain('src/api/api.module.ts imports "../adapters/model/openai/client"');
    expect(offenders).toContain('src/api/controller.ts imports "../adapters/model/fake/provider"');
  });
});

describe('check-layers on the real src/ tree', () => {
  it('finds no violations', () => {
    const run = checkLayers();

    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^layers: \d+ files checked, 0 violations\n$/);
  });
});

describe('check-layers usage errors', () => {
  it('exits 2 when the root has no src/ directory', () => {
    const run = checkLayers('--root', path.join(fixtures, 'does-not-exist'));

    expect(run.status).toBe(2);
    expect(run.stderr).toContain('no src/ directory');
  });
});

describe('check-layers telemetry rules (ADR 0015)', () => {
  it('allows @opentelemetry/api in the core layers and the SDK and prom-client only in adapters/ and composition/', () => {
    const run = checkLayers('--root', path.join(fixtures, 'telemetry'));
    const offenders = run.lines.filter((l) => !l.startsWith('layers:')).map((l) => l.slice(0, l.indexOf(' — ')));
    expect(run.status).toBe(1);
    expect([...offenders].sort()).toEqual(
      [
        'src/api/metrics.ts imports "prom-client"',
        'src/domain/span.ts imports "@opentelemetry/api"',
        'src/runtime/traced.ts imports "@opentelemetry/sdk-trace-node"',
      ].sort(),
    );
    expect(run.lines).toContain(
      'src/runtime/traced.ts imports "@opentelemetry/sdk-trace-node" — "@opentelemetry/sdk-trace-node" may be imported only under src/adapters/ or src/composition/ (docs/adr/0027-layer-rules.md)',
    );
  });
});

describe('check-layers shape rules (ADR 0027)', () => {
  let run: Run;
  let violations: string[];

  beforeAll(() => {
    run = checkLayers('--root', path.join(fixtures, 'reshape'));
    violations = run.lines.filter((l) => !l.startsWith('layers:'));
  });

  it('reports exactly one violation per broken shape rule, and exits 1', () => {
    expect(run.status).toBe(1);
    expect(violations.map((l) => l.slice(0, l.indexOf(' — ')))).toEqual([
      'src/adapters/alpha/client.ts imports "../beta/internal"',
      'src/context/reaches-back.ts imports "../runtime/loop"',
      'import cycle: src/domain/a.ts → src/domain/b.ts → src/domain/a.ts',
      'src/composition/surface.ts re-exports "../adapters/beta/internal"',
      'src/composition/surface.ts re-exports adapter symbol "BetaClient"',
      'src/composition/surface.ts exports Surface, whose type names adapter symbol "BetaClient"',
    ]);
    expect(run.lines[run.lines.length - 1]).toBe('layers: 17 files checked, 6 violations');
  });

  it('lets runtime import context but not context import runtime', () => {
    expect(violations.join('\n')).not.toContain('src/runtime/drives.ts');
    expect(violations).toContain(
      'src/context/reaches-back.ts imports "../runtime/loop" — context/ may import only domain/, ports/, policy/, tools/, ajv, decimal.js, yaml, @opentelemetry/api and Node builtins (docs/adr/0027-layer-rules.md)',
    );
  });

  it('lets an adapter reach another only through its index.ts, and its own files freely', () => {
    expect(violations.join('\n')).not.toContain('imports "../beta"');
    expect(violations.join('\n')).not.toContain('src/adapters/alpha/own.ts');
  });

  it('checks only the composition modules an entry point imports, and only their exported types', () => {
    expect(violations.join('\n')).not.toContain('src/composition/wiring.ts');
    expect(violations.join('\n')).not.toContain('makePort'); // its body builds an adapter; its type is a port
  });
});
