import type { Command } from 'commander';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { ResolveApprovalCommand } from '../../application/approvals/commands';
import { ListApprovalsQuery } from '../../application/runs/queries';
import { AppModule } from '../../composition/app.module';
import type { Platform } from '../../composition/platform';
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
  const resolve = (decision: 'approve_once' | 'deny') => (id: string, opts: { reason?: string; json?: boolean }) =>
    withPlatform('cli', async (p) => {
      const { app, commands } = await cliBuses(p);
      try {
        const r = await commands.execute(
          new ResolveApprovalCommand(LOCAL_PRINCIPAL, id, decision, opts.reason ?? null),
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
