import type { Command } from 'commander';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { ResolveApprovalCommand } from '../../application/approvals/commands';
import { ListApprovalsQuery } from '../../application/runs/queries';
import { AppModule } from '../../composition/app.module';
import type { Platform } from '../../composition/platform';
import { ValidationError } from '../../domain/errors';
import { LOCAL_PRINCIPAL } from '../../domain/principal';
import { withPlatform } from '../context';
import { EXIT } from '../exit-codes';

export async function cliBuses(
  platform: Platform,
): Promise<{ app: INestApplicationContext; commands: CommandBus; queries: QueryBus }> {
  const app = await NestFactory.createApplicationContext(AppModule.forPlatform(platform, { http: false }), {
    logger: false,
  });
  return { app, commands: app.get(CommandBus), queries: app.get(QueryBus) };
}

/** `agent approval list|approve|deny`: the same application commands as the HTTP API. */
export function registerApprovalCommands(program: Command): void {
  const approval = program.command('approval').description('list and resolve human approvals (plan §9.3)');
  approval
    .command('list')
    .description('list approvals (default: pending)')
    .option('--all', 'include resolved approvals')
    .option('--json', 'print JSON')
    .action((opts: { all?: boolean; json?: boolean }) =>
      withPlatform('cli', async (p) => {
        const { app, queries } = await cliBuses(p);
        try {
          const page = await queries.execute(
            new ListApprovalsQuery(LOCAL_PRINCIPAL, opts.all ? null : 'pending', 100, null),
          );
          if (opts.json) process.stdout.write(`${JSON.stringify(page.items)}\n`);
          else if (page.items.length === 0)
            process.stdout.write(opts.all ? 'no approvals\n' : 'no pending approvals\n');
          else for (const a of page.items) process.stdout.write(`${JSON.stringify(a)}\n`);
          return EXIT.ok;
        } finally {
          await app.close();
        }
      }),
    );
  const resolve =
    (decision: 'approve_once' | 'deny') =>
    (id: string, opts: { reason?: string; json?: boolean; arguments?: string }) =>
      withPlatform('cli', async (p) => {
        // `--arguments` turns an approval into "approve with edits" (ADR 0044).
        const edited = opts.arguments === undefined ? undefined : parseArguments(opts.arguments);
        const { app, commands } = await cliBuses(p);
        try {
          const r = await commands.execute(
            new ResolveApprovalCommand(
              LOCAL_PRINCIPAL,
              id,
              edited ? 'approve_with_edits' : decision,
              opts.reason ?? null,
              edited,
            ),
          );
          process.stdout.write(
            opts.json ? `${JSON.stringify(r)}\n` : `approval ${r.approvalId} ${r.status}; run ${r.runId} ${r.run}\n`,
          );
          return EXIT.ok;
        } finally {
          await app.close();
        }
      });
  approval
    .command('approve')
    .description('approve once; the run resumes and policy is revalidated')
    .argument('<approval-id>')
    .option(
      '--arguments <json>',
      "approve with edits: the tool runs with these arguments (a JSON object, checked against the tool's schema)",
    )
    .option('--reason <text>', 'why (recorded with the resolution)')
    .option('--json', 'print JSON')
    .action(resolve('approve_once'));
  approval
    .command('deny')
    .description('deny; the model is told the action was not performed')
    .argument('<approval-id>')
    .option('--reason <text>', 'why (shown to the model)')
    .option('--json', 'print JSON')
    .action(resolve('deny'));
}

/** `--arguments` must be a JSON object; anything else is refused before the platform is touched. */
function parseArguments(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new ValidationError(`--arguments is not valid JSON: ${(e as Error).message}`, { field: 'arguments' });
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new ValidationError('--arguments must be a JSON object of the edited tool arguments', { field: 'arguments' });
  return v as Record<string, unknown>;
}
