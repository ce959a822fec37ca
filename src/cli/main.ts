import 'reflect-metadata';
import { Command } from 'commander';
import { registerApprovalCommands } from './commands/approval';
import { registerAuthCommands } from './commands/auth';
import { registerChatCommands } from './commands/chat';
import { registerEvalCommands } from './commands/eval';
import { registerMcpCommands } from './commands/mcp';
import { registerSkillCommands } from './commands/skills';
import { registerProcessCommands } from './commands/processes';
import { registerProjectionCommands } from './commands/projections';
import { registerRunCommands } from './commands/run';
import { registerSandboxCommands } from './commands/sandboxd';
import { registerTrajectoryCommands } from './commands/trajectory';

/** The `agent` command. Every command calls the same application services as the HTTP API. */
export function buildProgram(): Command {
  const program = new Command('agent')
    .description('agent-core: a durable, event-sourced platform that runs AI agents')
    .version('0.1.0')
    .showHelpAfterError()
    .addHelpText(
      'after',
      `
Exit codes: 0 ok · 1 run/eval/verify did not succeed · 2 bad usage or input · 3 not found
            4 conflict · 5 database or configuration unavailable · 130 interrupted`,
    );
  registerProcessCommands(program);
  registerRunCommands(program);
  registerProjectionCommands(program);
  registerEvalCommands(program);
  registerAuthCommands(program);
  registerApprovalCommands(program);
  registerChatCommands(program);
  registerMcpCommands(program);
  registerSandboxCommands(program);
  registerTrajectoryCommands(program);
  registerSkillCommands(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  program.exitOverride((err) => {
    process.exit(err.exitCode === 0 ? 0 : 2);
  });
  await program.parseAsync(argv);
}
