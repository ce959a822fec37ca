/* eslint-disable @typescript-eslint/no-require-imports -- each command module is loaded only when it is used */
import { Command } from 'commander';
import { EXIT } from './exit-codes';

type Register = (program: Command) => void;

/**
 * Every top-level command, its one-line description, and the module that registers it. Only the
 * module of the command being run is loaded: most of them pull in Nest, TypeORM and the platform
 * (~1.5 s of requires), which `agent --help` or `agent doctor` does not need (ADR 0028). A test
 * (test/unit/cli/command-table.spec.ts) checks this table against what the modules register.
 */
export const COMMAND_TABLE: readonly { name: string; description: string; load: () => Register }[] = [
  {
    name: 'start',
    description: 'run the API and a worker as separate processes (embedded PostgreSQL when DATABASE_URL is unset)',
    load: () => (require('./commands/processes') as typeof import('./commands/processes')).registerProcessCommands,
  },
  {
    name: 'api',
    description: 'run the HTTP API',
    load: () => (require('./commands/processes') as typeof import('./commands/processes')).registerProcessCommands,
  },
  {
    name: 'worker',
    description: 'run a worker that claims and executes runs',
    load: () => (require('./commands/processes') as typeof import('./commands/processes')).registerProcessCommands,
  },
  {
    name: 'scheduler',
    description: 'run a scheduler that fires due schedules as durable runs',
    load: () => (require('./commands/processes') as typeof import('./commands/processes')).registerProcessCommands,
  },
  {
    name: 'migrate',
    description: 'apply pending database migrations',
    load: () => (require('./commands/processes') as typeof import('./commands/processes')).registerProcessCommands,
  },
  {
    name: 'doctor',
    description: 'check this machine: Node, data directory, database, sandbox, provider keys, MCP servers, port',
    load: () => (require('./commands/doctor') as typeof import('./commands/doctor')).registerDoctorCommand,
  },
  {
    name: 'session',
    description: 'manage sessions',
    load: () => (require('./commands/run') as typeof import('./commands/run')).registerRunCommands,
  },
  {
    name: 'run',
    description:
      'run a message as a new turn and stream its events; or: run get|events|cancel <run-id>, run input <run-id> "<answer>", run review <invocation-id> --retry|--fail',
    load: () => (require('./commands/run') as typeof import('./commands/run')).registerRunCommands,
  },
  {
    name: 'schedule',
    description: 'schedules: create|list|show|pause|resume|cancel|occurrences',
    load: () => (require('./commands/schedule') as typeof import('./commands/schedule')).registerScheduleCommands,
  },
  {
    name: 'projections',
    description: 'read-model maintenance',
    load: () =>
      (require('./commands/projections') as typeof import('./commands/projections')).registerProjectionCommands,
  },
  {
    name: 'backup',
    description: 'back up and restore the database and the artifact store (docs/operations/ha.md)',
    load: () => (require('./commands/backup') as typeof import('./commands/backup')).registerBackupCommands,
  },
  {
    name: 'eval',
    description: 'deterministic evaluation suite (evals/cases/*.yaml)',
    load: () => (require('./commands/eval') as typeof import('./commands/eval')).registerEvalCommands,
  },
  {
    name: 'auth',
    description: 'API authentication (AUTH_MODE=token)',
    load: () => (require('./commands/auth') as typeof import('./commands/auth')).registerAuthCommands,
  },
  {
    name: 'approval',
    description: 'list and resolve human approvals (plan §9.3)',
    load: () => (require('./commands/approval') as typeof import('./commands/approval')).registerApprovalCommands,
  },
  {
    name: 'chat',
    description: 'interactive chat: stream events, approve actions and answer questions as they come',
    load: () => (require('./commands/chat') as typeof import('./commands/chat')).registerChatCommands,
  },
  {
    name: 'mcp',
    description: 'MCP servers of the running API (docs/mcp.md)',
    load: () => (require('./commands/mcp') as typeof import('./commands/mcp')).registerMcpCommands,
  },
  {
    name: 'sandboxd',
    description: 'run the execution service that owns sandboxes (started by `agent start`; see docs/sandbox.md)',
    load: () => (require('./commands/sandboxd') as typeof import('./commands/sandboxd')).registerSandboxCommands,
  },
  {
    name: 'trajectory',
    description: 'export finished runs as redacted trajectories; manage export consent',
    load: () => (require('./commands/trajectory') as typeof import('./commands/trajectory')).registerTrajectoryCommands,
  },
  {
    name: 'memory',
    description: 'what the agent remembers: list, show, edit, forget (docs/memory.md)',
    load: () => (require('./commands/memory') as typeof import('./commands/memory')).registerMemoryCommands,
  },
  {
    name: 'notifications',
    description: 'notification preferences: per kind inbox|webhook|both|none, content, quiet hours',
    load: () =>
      (require('./commands/notifications') as typeof import('./commands/notifications')).registerNotificationCommands,
  },
  {
    name: 'skills',
    description: 'skill packages (SKILL.md) in SKILLS_DIR (default config/skills)',
    load: () => (require('./commands/skills') as typeof import('./commands/skills')).registerSkillCommands,
  },
];

/** Nest's decorators need it before any command module (they all may reach Nest) is evaluated. */
function loadCommandModule(entry: (typeof COMMAND_TABLE)[number]): Register {
  require('reflect-metadata');
  return entry.load();
}

function baseProgram(): Command {
  return (
    new Command('agent')
      .description('agent-core: a durable, event-sourced platform that runs AI agents')
      .version('0.1.0')
      .showHelpAfterError()
      // Set before any command is added: subcommands copy it when they are created, so bad usage of
      // `agent auth token create` exits 2 like bad usage of `agent` (commander's own default is 1).
      .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : EXIT.usage))
      .addHelpText(
        'after',
        `
Exit codes: 0 ok · 1 run/eval/verify did not succeed · 2 bad usage or input · 3 not found
            4 conflict · 5 database or configuration unavailable · 130 interrupted`,
      )
  );
}

/** The `agent` command with every command module loaded. Every command calls the same application services as the HTTP API. */
export function buildProgram(): Command {
  const program = baseProgram();
  const loaded = new Set<Register>();
  for (const entry of COMMAND_TABLE) {
    const register = loadCommandModule(entry);
    if (loaded.has(register)) continue;
    loaded.add(register);
    register(program);
  }
  return program;
}

/**
 * The `agent` command for one invocation: the named command's module for real, every other
 * command as a name and a description (enough for the help listing and for "unknown command").
 */
export function buildProgramFor(argv: readonly string[]): Command {
  const program = baseProgram();
  const args = argv.slice(2);
  const name = args[0] === 'help' ? args[1] : args[0];
  const entry = COMMAND_TABLE.find((e) => e.name === name);
  if (entry) loadCommandModule(entry)(program);
  for (const e of COMMAND_TABLE)
    if (!program.commands.some((c) => c.name() === e.name)) program.command(e.name).description(e.description);
  // The help listing keeps the table's order whichever module was loaded.
  const order = (c: Command) => COMMAND_TABLE.findIndex((e) => e.name === c.name());
  (program.commands as Command[]).sort((a, b) => order(a) - order(b));
  return program;
}

export async function main(argv: string[]): Promise<void> {
  await buildProgramFor(argv).parseAsync(argv);
}
