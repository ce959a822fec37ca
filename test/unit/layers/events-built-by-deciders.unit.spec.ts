import * as fs from 'node:fs';
import * as path from 'node:path';
import { EVENT_CATALOG } from '../../../src/domain/events/catalog';

const repoRoot = path.resolve(__dirname, '../../..');
const src = path.join(repoRoot, 'src');

/**
 * Files outside src/domain/ still allowed to spell an event object while the run loop and tool
 * pipeline are being moved onto the deciders (issue 24, item 3: the "runloop" reshape). The list
 * only shrinks: an entry that no longer spells an event fails the second test, so whoever empties
 * a file deletes its line here too. Nothing outside src/runtime/ may be added.
 */
const NOT_YET_ON_DECIDERS: readonly string[] = [
  'src/runtime/lease-scope.ts',
  'src/runtime/run-loop.ts',
  'src/runtime/tool-pipeline.ts',
];

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

/** Every event object literal in src/ outside src/domain/, as `file:line type`. */
function eventLiterals(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of tsFiles(src)) {
    const rel = path.relative(repoRoot, file).split(path.sep).join('/');
    if (rel.startsWith('src/domain/')) continue;
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

  it('no event object literal outside src/domain/ (but the allowlisted run loop files)', () => {
    const offending = [...found.entries()]
      .filter(([file]) => !NOT_YET_ON_DECIDERS.includes(file))
      .flatMap(([, hits]) => hits);
    expect(offending).toEqual([]);
  });

  it('the allowlist holds only run loop files that still spell events', () => {
    expect(NOT_YET_ON_DECIDERS.filter((f) => !f.startsWith('src/runtime/'))).toEqual([]);
    expect(NOT_YET_ON_DECIDERS.filter((f) => !found.has(f))).toEqual([]);
  });

  it('the scan finds an event literal where there is one', () => {
    expect("{ type: 'run.failed', data }".match(literal)).not.toBeNull();
    expect("e.type === 'run.failed'".match(literal)).toBeNull();
    expect("{ type: 'text', text }".match(literal)).toBeNull();
  });
});
