import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFakeProvider } from '../../../src/adapters/model/fake';
import { systemClock } from '../../../src/adapters/system-clock';
import { compactorOptions } from '../../../src/composition/context-compactor';
import { loadSettings } from '../../../src/config/settings';
import { ContextEngine } from '../../../src/context/engine';
import { ConfigurationError } from '../../../src/domain/errors';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { ModelRouter } from '../../../src/runtime/model-router';
import { MemoryHistorySource, SessionLogBuilder } from '../../../bench/support/session-history';
import { AGENT, playTurn } from './support';

let dir: string;
const fixture = (name: string, text: string) =>
  writeFileSync(
    join(dir, `${name}.yaml`),
    `name: ${name}\ndescription: test\nturns:\n  - text: ${JSON.stringify(text)}\n`,
  );

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'compactor-setting-'));
  fixture(
    'compaction_good',
    JSON.stringify({
      goal: 'Fill the window',
      constraints: [],
      unresolvedQuestions: ['Which turn matters?'],
      dialogue: [{ role: 'user', excerpt: 'The user filled the window.', sourceSequence: 1 }],
    }),
  );
  fixture('compaction_not_json', 'Here is a summary, not JSON.');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const router = () => new ModelRouter([createFakeProvider({ fixturesDir: dir, clock: systemClock })]);
let n = 0;
const ids = { uuid: () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}` };

/** Plays turns until the engine compacts; returns the first context.compacted event. */
async function firstCompaction(engine: ContextEngine, log: SessionLogBuilder, modelPolicy: string) {
  for (let i = 1; i <= 40; i++) {
    const b = await playTurn(
      engine,
      log,
      i,
      `Turn ${i}. ${'Some words to fill the window quickly. '.repeat(20)}`,
      'ok',
      {
        agent: { ...AGENT, modelPolicy },
      },
    );
    if (b.events.length > 0) break;
  }
  return log.events.find((x) => x.type === 'context.compacted') as StoredEvent<'context.compacted'>;
}

describe('CONTEXT_COMPACTOR (settings and composition)', () => {
  it('parses extractive (default) and model, and refuses anything else', () => {
    expect(loadSettings({}).contextCompactor).toBe('extractive');
    expect(loadSettings({}).contextCompactorModelPolicy).toBeNull();
    const s = loadSettings({ CONTEXT_COMPACTOR: 'model', CONTEXT_COMPACTOR_MODEL_POLICY: 'fake:summary' });
    expect(s.contextCompactor).toBe('model');
    expect(s.contextCompactorModelPolicy).toBe('fake:summary');
    expect(() => loadSettings({ CONTEXT_COMPACTOR: 'llm' })).toThrow(ConfigurationError);
  });

  it('extractive leaves the engine on the extractive compactor', async () => {
    const log = new SessionLogBuilder();
    const opts = compactorOptions({ contextCompactor: 'extractive', contextCompactorModelPolicy: null }, router(), ids);
    expect(opts.compactorFor).toBeUndefined();
    const e = await firstCompaction(new ContextEngine(new MemoryHistorySource(log.events), opts), log, 'fake:x');
    expect(e.data).toMatchObject({ compactor: 'extractive', fallbackReason: null });
  });

  it('model with a configured policy records compactor model_assisted from a valid summary', async () => {
    const log = new SessionLogBuilder();
    const opts = compactorOptions(
      { contextCompactor: 'model', contextCompactorModelPolicy: 'fake:compaction_good' },
      router(),
      ids,
    );
    const e = await firstCompaction(new ContextEngine(new MemoryHistorySource(log.events), opts), log, 'fake:x');
    expect(e.data.compactor).toBe('model_assisted');
    expect(e.data.fallbackReason).toBeNull();
    expect(e.data.summary.goal).toBe('Fill the window');
    expect(e.data.summary.unresolvedQuestions).toContain('Which turn matters?');
  });

  it("model on the run's own route falls back to extractive on malformed output and records why", async () => {
    const log = new SessionLogBuilder();
    const opts = compactorOptions({ contextCompactor: 'model', contextCompactorModelPolicy: null }, router(), ids);
    const e = await firstCompaction(
      new ContextEngine(new MemoryHistorySource(log.events), opts),
      log,
      'fake:compaction_not_json',
    );
    expect(e.data.compactor).toBe('extractive');
    expect(e.data.fallbackReason).toMatch(/^model output is not JSON/);
  });

  it('refuses at startup a compactor policy that cannot be routed', () => {
    expect(() =>
      compactorOptions({ contextCompactor: 'model', contextCompactorModelPolicy: 'nowhere:x' }, router(), ids),
    ).toThrow(ConfigurationError);
  });
});
