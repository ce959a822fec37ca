import * as fs from 'node:fs';
import * as path from 'node:path';
import { EVENT_CATALOG } from '../../../src/domain/events/catalog';

const repoRoot = path.resolve(__dirname, '../../..');
const src = path.join(repoRoot, 'src');

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) return tsFiles(p);
    return /\.tsx?$/.test(d.name) && !d.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** `type: 'run.failed'` (or "…", `…`) for any catalog type: an event spelled as an object literal. */
const literal = new RegExp(
  `\\btype\\s*:\\s*(['"\`])(${Object.keys(EVENT_CATALOG)
    .map((t) => t.replace(/\./g, '\\.'))
    .join('|')})\\1`,
  'g',
);

/** Every event object literal in src/ outside src/domain/deciders/, as `file:line type`. */
function eventLiterals(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of tsFiles(src)) {
    const rel = path.relative(repoRoot, file).split(path.sep).join('/');
    if (rel.startsWith('src/domain/deciders/')) continue;
    // The whole text, so a literal split over lines (`type:` then the string) is found too.
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(literal)) {
      const line = text.slice(0, m.index).split('\n').length;
      found.set(rel, [...(found.get(rel) ?? []), `${rel}:${line} ${m[2]}`]);
    }
  }
  return found;
}

describe('events are built only by the deciders of src/domain/deciders/', () => {
  const found = eventLiterals();

  it('no event object literal anywhere in src/ outside the deciders', () => {
    expect([...found.values()].flat()).toEqual([]);
  });

  it('the scan finds an event literal where there is one', () => {
    expect("{ type: 'run.failed', data }".match(literal)).not.toBeNull();
    expect("e.type === 'run.failed'".match(literal)).toBeNull();
    expect("{ type: 'text', text }".match(literal)).toBeNull();
  });
});
