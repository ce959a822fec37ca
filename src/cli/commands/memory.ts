import type { Command } from 'commander';
import { NotFoundError, ValidationError } from '../../domain/errors';
import { LOCAL_PRINCIPAL } from '../../domain/principal';
import type { MemoryChanges } from '../../domain/deciders/memory';
import { isScope, isStatus, MEMORY_SCOPES, MEMORY_STATUSES } from '../../domain/memory/memory-record';
import type { MemoryRecord } from '../../ports/memory-records';
import { withPlatform } from '../context';
import { EXIT } from '../exit-codes';

const out = (s: string) => process.stdout.write(`${s}\n`);

function line(m: MemoryRecord): string {
  const flags = m.status === 'active' ? '' : ` [${m.status}]`;
  return `${m.id}  ${m.subject ?? '-'}: ${m.statement ?? '(deleted)'}${flags}  (confidence ${m.confidence}, ${m.trust}, ${m.scope})`;
}

interface ListOptions {
  subject?: string;
  scope?: string;
  status?: string;
  q?: string;
  limit?: string;
  json?: boolean;
}

interface EditOptions {
  statement?: string;
  subject?: string;
  sensitivity?: string;
  confidence?: string;
  expiresAt?: string;
  confirm?: boolean;
  json?: boolean;
}

function changesOf(o: EditOptions): MemoryChanges {
  const changes: Record<string, unknown> = {};
  if (o.statement !== undefined) changes.statement = o.statement;
  if (o.subject !== undefined) changes.subject = o.subject;
  if (o.sensitivity !== undefined) changes.sensitivity = o.sensitivity;
  if (o.confidence !== undefined) changes.confidence = Number(o.confidence);
  if (o.expiresAt !== undefined) changes.expiresAt = o.expiresAt === 'never' ? null : o.expiresAt;
  if (o.confirm) changes.status = 'active';
  if (Object.keys(changes).length === 0)
    throw new ValidationError(
      'nothing to change: give --statement, --subject, --sensitivity, --confidence, --expires-at or --confirm',
    );
  return changes;
}

/**
 * `agent memory list|show|edit|forget` (issue 30, docs/memory.md): the local principal's long-term
 * memories, through the same store as `/v1/memories`. An edit is recorded with the user as actor;
 * `forget` deletes the memory and erases its statement everywhere.
 */
export function registerMemoryCommands(program: Command): void {
  const memory = program
    .command('memory')
    .description('what the agent remembers: list, show, edit, forget (docs/memory.md)');
  memory
    .command('list')
    .description('list memories (newest change first; deleted ones only with --status deleted)')
    .option('--subject <text>', 'part of the subject')
    .option('--scope <scope>', 'principal, agent or tenant')
    .option('--status <status>', 'active, tentative, conflicting, superseded, expired or deleted')
    .option('-q, --q <words>', 'words to find in subject and statement')
    .option('--limit <n>', 'at most this many (1-200)', '50')
    .option('--json', 'print JSON')
    .action((o: ListOptions) =>
      withPlatform('cli', async (p) => {
        const limit = Number(o.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 200)
          throw new ValidationError('--limit must be an integer from 1 to 200');
        if (o.scope !== undefined && !isScope(o.scope))
          throw new ValidationError(`--scope must be one of ${MEMORY_SCOPES.join(', ')}`);
        if (o.status !== undefined && !isStatus(o.status))
          throw new ValidationError(`--status must be one of ${MEMORY_STATUSES.join(', ')}`);
        const page = await p.memories.list(LOCAL_PRINCIPAL, {
          subject: o.subject,
          scope: o.scope,
          status: o.status,
          q: o.q,
          limit,
          cursor: null,
        });
        if (o.json) out(JSON.stringify(page.items));
        else if (page.items.length === 0) out('no memories');
        else for (const m of page.items) out(line(m));
        return EXIT.ok;
      }),
    );
  memory
    .command('show')
    .description('one memory with its source events and the runs that used it')
    .argument('<memory-id>')
    .option('--json', 'print JSON')
    .action((id: string, o: { json?: boolean }) =>
      withPlatform('cli', async (p) => {
        const d = await p.memories.get(LOCAL_PRINCIPAL, id);
        if (!d) throw new NotFoundError(`memory ${id} does not exist`, { memoryId: id });
        if (o.json) out(JSON.stringify(d));
        else {
          out(line(d.record));
          for (const e of d.sourceEvents) out(`  source: ${e.type} #${e.sequence} of session ${e.sessionId}`);
          for (const u of d.usedBy) out(`  used by run ${u.runId ?? '-'} (${u.purpose}, score ${u.score ?? '-'})`);
          if (d.record.question) out(`  question: ${d.record.question}`);
        }
        return EXIT.ok;
      }),
    );
  memory
    .command('edit')
    .description('edit a memory (recorded with you as actor)')
    .argument('<memory-id>')
    .option('--statement <text>', 'the new statement')
    .option('--subject <text>', 'the new subject')
    .option('--sensitivity <level>', 'public, personal or sensitive')
    .option('--confidence <0-1>', 'how sure')
    .option('--expires-at <iso|never>', 'when it stops being recalled')
    .option('--confirm', 'confirm a conflicting or tentative memory (its rivals are superseded)')
    .option('--json', 'print JSON')
    .action((id: string, o: EditOptions) =>
      withPlatform('cli', async (p) => {
        const m = await p.memories.edit(LOCAL_PRINCIPAL, id, changesOf(o));
        out(o.json ? JSON.stringify(m) : line(m));
        return EXIT.ok;
      }),
    );
  memory
    .command('forget')
    .description('delete a memory: its statement is erased from the store and every event that quoted it')
    .argument('<memory-id>')
    .action((id: string) =>
      withPlatform('cli', async (p) => {
        await p.memories.forget(LOCAL_PRINCIPAL, id, { actorType: 'user', actorId: LOCAL_PRINCIPAL.principalId });
        out(`forgot memory ${id}`);
        return EXIT.ok;
      }),
    );
}
