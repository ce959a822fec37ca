import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContextEngine } from '../../../src/context/engine';
import { ModelAssistedCompactor } from '../../../src/context/model-compactor';
import { createFakeProvider } from '../../../src/adapters/model/fake';
import { systemClock } from '../../../src/adapters/system-clock';
import { EMPTY_WORKING_STATE } from '../../../src/domain/context/working-state';
import { SessionHistory } from '../../../src/context/history';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { MemoryHistorySource, SessionLogBuilder } from '../../../bench/support/session-history';
import { playTurn } from './support';

let dir: string;
const fixture = (name: string, text: string) =>
  writeFileSync(
    join(dir, `${name}.yaml`),
    `name: ${name}\ndescription: test\nturns:\n  - text: ${JSON.stringify(text)}\n`,
  );

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'compaction-fixtures-'));
  fixture(
    'compaction_good',
    JSON.stringify({
      goal: 'Plan a trip to Lima',
      constraints: ['Always answer in French.'],
      unresolvedQuestions: ['Which hotel?'],
      dialogue: [{ role: 'user', excerpt: 'The user wants to plan a trip.', sourceSequence: 1 }],
    }),
  );
  fixture('compaction_not_json', 'Sure! Here is a summary: the user wants a trip.');
  fixture(
    'compaction_bad_source',
    JSON.stringify({
      goal: null,
      constraints: [],
      unresolvedQuestions: [],
      dialogue: [{ role: 'user', excerpt: 'x', sourceSequence: 9999 }],
    }),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function compactor(fixtureName: string) {
  let n = 0;
  return new ModelAssistedCompactor(
    createFakeProvider({ fixturesDir: dir, clock: systemClock }),
    { provider: 'fake', model: fixtureName, contextLimit: null },
    { newAttemptId: () => `attempt-${++n}` },
  );
}

function units() {
  const log = new SessionLogBuilder();
  log.turn(1, { user: 'I want to plan a trip. Always answer in French.', assistant: 'Bien sûr.' });
  const h = new SessionHistory();
  h.apply(log.events);
  return h.units;
}

const input = () => ({
  previous: null,
  workingState: EMPTY_WORKING_STATE,
  units: units(),
  currentGoal: null,
  maxSummaryChars: 5_000,
});

describe('model-assisted compactor (through the fake provider)', () => {
  it('uses the model summary, keeping the extractive constraints and tool results', async () => {
    const out = await compactor('compaction_good').compact(input());
    expect(out.compactor).toBe('model_assisted');
    expect(out.fallbackReason).toBeNull();
    expect(out.summary.goal).toBe('Plan a trip to Lima');
    expect(out.summary.constraints).toEqual(['Always answer in French.']);
    expect(out.summary.unresolvedQuestions).toEqual(['Which hotel?']);
    expect(out.summary.dialogue).toEqual([
      { role: 'user', excerpt: 'The user wants to plan a trip.', sourceSequence: 1 },
    ]);
  });

  it('falls back to the extractive compactor on output that is not JSON, and records why', async () => {
    const out = await compactor('compaction_not_json').compact(input());
    expect(out.compactor).toBe('extractive');
    expect(out.fallbackReason).toMatch(/^model output is not JSON/);
    expect(out.summary.constraints).toEqual(['Always answer in French.']);
  });

  it('falls back when the model cites an event it was not given', async () => {
    const out = await compactor('compaction_bad_source').compact(input());
    expect(out.compactor).toBe('extractive');
    expect(out.fallbackReason).toBe('dialogue[0] cites sequence 9999, which is not a summarised message');
  });

  it('falls back when the model call itself fails (unknown fixture)', async () => {
    const out = await compactor('no_such_fixture').compact(input());
    expect(out.compactor).toBe('extractive');
    expect(out.fallbackReason).toMatch(/no_such_fixture/);
  });

  it('records the fallback reason on the context.compacted event of a build', async () => {
    const log = new SessionLogBuilder();
    const engine = new ContextEngine(new MemoryHistorySource(log.events), {
      compactor: compactor('compaction_not_json'),
    });
    let compacted = false;
    for (let i = 1; i <= 40 && !compacted; i++) {
      const b = await playTurn(
        engine,
        log,
        i,
        `Turn ${i}. ${'Some words to fill the window quickly. '.repeat(20)}`,
        'ok',
      );
      compacted = b.events.length > 0;
    }
    const e = log.events.find((x) => x.type === 'context.compacted') as StoredEvent<'context.compacted'>;
    expect(e.data).toMatchObject({ compactor: 'extractive', fallbackReason: expect.stringMatching(/not JSON/) });
  });
});
