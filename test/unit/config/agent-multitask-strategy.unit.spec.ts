import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadAgentFiles } from '../../../src/adapters/config/yaml-agent-catalog';
import { ConfigurationError } from '../../../src/domain/errors';

const GENERAL = fs.readFileSync(path.join(__dirname, '../../../config/agents/general.yaml'), 'utf8');

function agentDir(extra: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-yaml-'));
  fs.writeFileSync(path.join(dir, 'a.yaml'), `${GENERAL}\n${extra}\n`);
  return dir;
}

describe("an agent's multitask_strategy (issue 33)", () => {
  it('is absent by default: the server default (reject) applies', () => {
    const [spec] = loadAgentFiles(agentDir(''));
    expect(spec.multitaskStrategy).toBeUndefined();
  });

  it('names the strategy a message uses while a run of the session works', () => {
    const [spec] = loadAgentFiles(agentDir('multitask_strategy: enqueue'));
    expect(spec.multitaskStrategy).toBe('enqueue');
    expect(spec.metadata.multitask_strategy).toBe('enqueue');
  });

  it('refuses a strategy the build does not know, naming the field', () => {
    expect(() => loadAgentFiles(agentDir('multitask_strategy: shout'))).toThrow(ConfigurationError);
    expect(() => loadAgentFiles(agentDir('multitask_strategy: shout'))).toThrow(/multitask_strategy/);
  });
});
