import * as fs from 'node:fs';
import * as path from 'node:path';
import { EVENT_CATALOG } from '../../../src/domain/events/catalog';

/**
 * Every catalog event type is spelled by exactly one decider: `event('type', …)` of decider.ts, or
 * a decider's own thin wrappers of it (`emit(cmd, 'type', …)`, `guarded(state, to, 'type', …)`).
 */
describe('deciders cover the event catalog', () => {
  const dir = path.resolve(__dirname, '../../../src/domain/deciders');
  const spelled = new Map<string, string[]>();
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const text = fs.readFileSync(path.join(dir, file), 'utf8');
    const constructions = /(?:\bevent\(|\bemit\(\w+,|\bguarded\(\w+, '\w+',)\s*'([a-z_]+(?:\.[a-z_]+)+)'/g;
    for (const m of text.matchAll(constructions)) {
      const files = spelled.get(m[1]) ?? [];
      if (!files.includes(file)) files.push(file);
      spelled.set(m[1], files);
    }
  }

  it.each(Object.keys(EVENT_CATALOG).map((t) => [t]))('%s is constructed by exactly one decider', (type) => {
    expect(spelled.get(type) ?? []).toHaveLength(1);
  });

  it('no decider constructs a type outside the catalog', () => {
    expect([...spelled.keys()].filter((t) => !(t in EVENT_CATALOG))).toEqual([]);
  });
});
