import { Command } from 'commander';
import { buildProgram, buildProgramFor, COMMAND_TABLE } from '../../../src/cli/main';

/**
 * `agent --help` lists commands from COMMAND_TABLE without loading their modules (ADR 0028), so the
 * table must say exactly what the modules register: every command, with the same description.
 */
describe('the CLI command table', () => {
  it('names every top-level command the modules register, with their own descriptions', () => {
    const full = buildProgram();
    const registered = full.commands.map((c) => [c.name(), c.description()]);
    expect(registered.sort()).toEqual(COMMAND_TABLE.map((e) => [e.name, e.description]).sort());
  });

  it('loads the named command for real and lists the others by name, in the table order', () => {
    const p = buildProgramFor(['node', 'agent', 'approval', 'list']);
    expect(p.commands.map((c) => c.name())).toEqual(COMMAND_TABLE.map((e) => e.name));
    const approval = p.commands.find((c) => c.name() === 'approval') as Command;
    expect(approval.commands.map((c) => c.name())).toEqual(['list', 'approve', 'deny']);
    const chat = p.commands.find((c) => c.name() === 'chat') as Command;
    expect(chat.commands).toEqual([]);
  });

  it('loads the command named after help', () => {
    const p = buildProgramFor(['node', 'agent', 'help', 'trajectory']);
    const t = p.commands.find((c) => c.name() === 'trajectory') as Command;
    expect(t.commands.map((c) => c.name())).toEqual(['export', 'consent']);
  });
});
