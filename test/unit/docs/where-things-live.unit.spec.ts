import * as fs from 'node:fs';
import * as path from 'node:path';
import { EVENT_CATALOG } from '../../../src/domain/events/catalog';

/**
 * docs/architecture.md's "Where things live" tables are checked against the code, so they cannot
 * drift: which decider builds each event type, which projections fold it, and which modules ask each
 * decider. On a mismatch the test prints the tables as they should read.
 */
const root = path.resolve(__dirname, '../../..');
const read = (rel: string) => fs.readFileSync(path.join(root, rel), 'utf8');
const tsFiles = (rel: string): string[] =>
  fs.readdirSync(path.join(root, rel), { withFileTypes: true }).flatMap((d) => {
    const p = `${rel}/${d.name}`;
    if (d.isDirectory()) return tsFiles(p);
    return d.name.endsWith('.ts') ? [p] : [];
  });

const DECIDERS = 'src/domain/deciders';
const PROJECTIONS = 'src/domain/projections';
/** The decider's own spellings of an event (as test/unit/deciders/catalog-coverage checks them). */
const CONSTRUCTION = /(?:\bevent\(|\bemit\(\w+,|\bguarded\(\w+, '\w+',)\s*'([a-z_]+(?:\.[a-z_]+)+)'/g;

function deciderOf(type: string): string {
  const files = tsFiles(DECIDERS).filter((f) => [...read(f).matchAll(CONSTRUCTION)].some((m) => m[1] === type));
  return files.map((f) => path.basename(f)).join(', ');
}

function projectionsOf(type: string): string {
  return tsFiles(PROJECTIONS)
    .filter((f) => f.endsWith('-projection.ts') && read(f).includes(`'${type}'`))
    .map((f) => path.basename(f))
    .join(', ');
}

function askersOf(decider: string): string {
  const name = decider.replace(/\.ts$/, '');
  const importer = new RegExp(`from '[./]*(?:domain/)?deciders/${name}'`);
  return tsFiles('src')
    .filter((f) => !f.startsWith(`${DECIDERS}/`) && importer.test(read(f)))
    .map((f) => `\`${f.replace(/^src\//, '')}\``)
    .join(', ');
}

function expectedEventsTable(): string[] {
  return Object.keys(EVENT_CATALOG).map((t) => `| \`${t}\` | \`${deciderOf(t)}\` | ${projectionsOf(t) || '—'} |`);
}

function expectedAskersTable(): string[] {
  return tsFiles(DECIDERS)
    .map((f) => path.basename(f))
    .filter((f) => f !== 'decider.ts')
    .sort()
    .map((d) => `| \`${d}\` | ${askersOf(d) || '—'} |`);
}

/** A table row with its cells trimmed, so a formatter's column padding does not count. */
const normalized = (row: string) =>
  row
    .split('|')
    .map((c) => c.trim())
    .join('|');

function tableAfter(doc: string, heading: string): string[] {
  const at = doc.indexOf(heading);
  if (at < 0) return [];
  const lines = doc.slice(at).split('\n');
  const start = lines.findIndex((l) => l.startsWith('| ---'));
  const rows: string[] = [];
  for (const l of lines.slice(start + 1)) {
    if (!l.startsWith('|')) break;
    rows.push(normalized(l));
  }
  return rows;
}

describe('docs/architecture.md: where things live', () => {
  const doc = read('docs/architecture.md');

  it('lists every catalog event with the one decider that builds it and the projections that fold it', () => {
    const expected = expectedEventsTable().map(normalized);
    const actual = tableAfter(doc, '### Events: decider and projections');
    if (actual.join('\n') !== expected.join('\n')) process.stderr.write(`${expected.join('\n')}\n`);
    expect(actual).toEqual(expected);
  });

  it('lists every decider with the modules that ask it', () => {
    const expected = expectedAskersTable().map(normalized);
    const actual = tableAfter(doc, '### Deciders: who asks them');
    if (actual.join('\n') !== expected.join('\n')) process.stderr.write(`${expected.join('\n')}\n`);
    expect(actual).toEqual(expected);
  });
});
