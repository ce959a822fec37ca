import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadAgentFiles } from '../../../src/adapters/config/yaml-agent-catalog';
import { consensusQuestion, consensusSettingsOf } from '../../../src/domain/consensus/settings';
import { ConfigurationError } from '../../../src/domain/errors';

const GENERAL = fs.readFileSync(path.join(__dirname, '../../../config/agents/general.yaml'), 'utf8');

function agentDir(extra: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-yaml-'));
  fs.writeFileSync(path.join(dir, 'a.yaml'), `${GENERAL}\n${extra}\n`);
  return dir;
}

function refusal(extra: string): string {
  try {
    loadAgentFiles(agentDir(extra));
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigurationError);
    return (e as Error).message;
  }
  throw new Error('the agent file was accepted');
}

describe("an agent's consensus settings (issue 32, ADR 0047)", () => {
  it('defaults to the prefix `consensus:`, two engines on the agent’s own policy, quorum 2, one re-sample', () => {
    const [spec] = loadAgentFiles(agentDir(''));
    expect(consensusSettingsOf(spec, 'demo')).toEqual({
      mode: 'single',
      prefix: 'consensus:',
      engines: ['demo', 'demo'],
      quorum: 2,
      maxResamples: 1,
      synthesizer: 'demo',
    });
  });

  it('keeps its engines, quorum, prefix, synthesizer and mode', () => {
    const [spec] = loadAgentFiles(
      agentDir(
        'mode: consensus\nconsensus: { prefix: "all:", engines: [a, b, c], quorum: 2, max_resamples: 2, synthesizer: s }',
      ),
    );
    expect(consensusSettingsOf(spec, 'demo')).toEqual({
      mode: 'consensus',
      prefix: 'all:',
      engines: ['a', 'b', 'c'],
      quorum: 2,
      maxResamples: 2,
      synthesizer: 's',
    });
  });

  it.each([
    ['consensus: { engines: [] }', '/consensus/engines must be a list of 1 to 8 model policies'],
    ['consensus: { engines: demo }', '/consensus/engines must be a list'],
    ['consensus: { engines: [demo, ""] }', '/consensus/engines/1 must be a model policy'],
    ['consensus: { engines: [demo, 3] }', '/consensus/engines/1 must be a model policy'],
    [
      'consensus: { engines: [a, b], quorum: 3 }',
      '/consensus/quorum must be an integer from 1 to the number of engines (2)',
    ],
    ['consensus: { quorum: 0 }', '/consensus/quorum must be an integer from 1 to the number of engines (2)'],
    ['consensus: { quorum: 1.5 }', '/consensus/quorum'],
    ['consensus: { max_resamples: 9 }', '/consensus/max_resamples must be an integer from 0 to 3'],
    ['consensus: { prefix: "  " }', '/consensus/prefix'],
    ['consensus: { engine: [a] }', '/consensus/engine is not a consensus setting'],
    ['mode: chorus', '/mode must be one of single, consensus'],
  ])('refuses %s naming the field', (yaml, message) => {
    const m = refusal(yaml);
    expect(m).toContain('a.yaml: ');
    expect(m).toContain(message);
  });

  it('reads the question after the prefix (any case), or the whole message in consensus mode', () => {
    const single = { mode: 'single' as const, prefix: 'consensus:' };
    expect(consensusQuestion('Consensus: why is the sky blue?', single)).toBe('why is the sky blue?');
    expect(consensusQuestion('why is the sky blue?', single)).toBeNull();
    expect(consensusQuestion('consensus:   ', single)).toBeNull();
    expect(consensusQuestion('why?', { mode: 'consensus', prefix: null })).toBe('why?');
    expect(consensusQuestion('consensus: why?', { mode: 'single', prefix: null })).toBeNull();
  });
});
