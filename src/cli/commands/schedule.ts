import type { Command } from 'commander';
import type { ScheduleView } from '../../application/schedules/schedule-view';
import { ValidationError } from '../../domain/errors';
import { LOCAL_PRINCIPAL } from '../../domain/principal';
import type { OccurrenceRecord } from '../../ports/schedules';
import { withPlatform } from '../context';
import { EXIT } from '../exit-codes';

interface CreateOptions {
  in?: string;
  at?: string;
  daily?: string;
  weekly?: string;
  monthly?: string;
  yearly?: string;
  time?: string;
  cron?: string;
  tz?: string;
  title?: string;
  agent?: string;
  misfire?: string;
  json?: boolean;
}

const UNITS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `5s`, `2m`, `1h30m`, `90` (seconds) as seconds. */
export function parseDuration(raw: string): number {
  const t = raw.trim();
  if (/^\d+$/.test(t)) return Number(t);
  const parts = [...t.matchAll(/(\d+)\s*([smhd])/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== t.replace(/\s+/g, ''))
    throw new ValidationError(`--in must be a duration such as 5s, 2m or 1h30m, got "${raw}"`, { field: 'in' });
  return parts.reduce((sum, p) => sum + Number(p[1]) * UNITS[p[2]], 0);
}

/** The machine's own zone, the default of `--tz`. */
function localZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** The wire cadence the options describe (exactly one of --in, --at, --daily, --weekly, --monthly, --yearly, --cron). */
export function cadenceFromOptions(o: CreateOptions): Record<string, unknown> {
  const given = (['in', 'at', 'daily', 'weekly', 'monthly', 'yearly', 'cron'] as const).filter(
    (k) => o[k] !== undefined,
  );
  if (given.length !== 1)
    throw new ValidationError('give exactly one of --in, --at, --daily, --weekly, --monthly, --yearly, --cron', {
      field: 'cadence',
    });
  const time_zone = o.tz ?? localZone();
  const time = o.time ?? '09:00';
  switch (given[0]) {
    case 'in':
      return { kind: 'once', in_seconds: parseDuration(o.in!) };
    case 'at':
      return { kind: 'once', at: o.at, time_zone };
    case 'daily':
      return { kind: 'daily', time: o.daily, time_zone };
    case 'weekly':
      return { kind: 'weekly', days: o.weekly!.split(',').map((d) => d.trim().toLowerCase()), time, time_zone };
    case 'monthly':
      return { kind: 'monthly', day: o.monthly === 'last' ? 'last' : Number(o.monthly), time, time_zone };
    case 'yearly': {
      const [month, day] = o.yearly!.split('-').map(Number);
      return { kind: 'yearly', month, day, time, time_zone };
    }
    case 'cron':
      return { kind: 'cron', expression: o.cron, time_zone };
  }
}

function line(s: ScheduleView): string {
  const next = s.nextFireAt ? `next ${s.nextFireAtLocal} (${s.nextFireAt})` : 'no next firing';
  return `${s.id}  ${s.status.padEnd(9)} r${s.revision}  ${s.cadenceDescription}  ${next}  ${JSON.stringify(s.title)}`;
}

function occurrenceLine(o: OccurrenceRecord): string {
  const run = o.runId ? `run ${o.runId} ${o.runStatus ?? ''}`.trim() : (o.reason ?? '');
  const missed = o.missedCount > 0 ? ` (+${o.missedCount} coalesced)` : '';
  return `${o.nominalAt}  ${o.status.padEnd(15)} fired ${o.firedAt}  ${run}${missed}`;
}

function print(json: boolean | undefined, value: unknown, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}

/** `agent schedule …`: the schedule service the HTTP API uses, as the local principal. */
export function registerScheduleCommands(program: Command): void {
  const schedule = program
    .command('schedule')
    .description('schedules: create|list|show|pause|resume|cancel|occurrences');
  registerCreate(schedule);
  registerReads(schedule);
  registerLifecycle(schedule);
}

function registerCreate(schedule: Command): void {
  schedule
    .command('create')
    .description('create a schedule: agent schedule create --in 5s "What is 2 plus 2?"')
    .argument('<message...>', 'the message each occurrence submits')
    .option('--in <duration>', 'once, after a duration (5s, 2m, 1h30m)')
    .option('--at <local-date-time>', 'once, at a local date-time (2027-03-28T02:30) in --tz')
    .option('--daily <HH:MM>', 'every day at this local time')
    .option('--weekly <days>', 'on these days (mon,fri) at --time')
    .option('--monthly <day>', 'on this day of the month (1-31, or last) at --time')
    .option('--yearly <MM-DD>', 'every year on this date at --time')
    .option('--time <HH:MM>', 'the local time for --weekly, --monthly, --yearly (default 09:00)')
    .option('--cron <expression>', 'a 5-field cron expression, read in --tz')
    .option('--tz <zone>', "an IANA time zone (default: this machine's)")
    .option('--title <text>', 'a title (default: the message)')
    .option('--agent <id>', 'the agent (default AGENT_DEFAULT_AGENT), pinned at its current version')
    .option('--misfire <policy>', 'after downtime: run_once (default) or skip')
    .option('--json', 'print JSON')
    .action((words: string[], o: CreateOptions) =>
      withPlatform('cli', async (p) => {
        const r = await p.schedules.service.create(LOCAL_PRINCIPAL, {
          message: words.join(' '),
          cadence: cadenceFromOptions(o),
          title: o.title,
          agent_id: o.agent,
          misfire: o.misfire,
        });
        print(o.json, r.schedule, `created ${line(r.schedule)}`);
        return EXIT.ok;
      }),
    );
}

function registerReads(schedule: Command): void {
  schedule
    .command('list')
    .description('your schedules, newest first')
    .option('--status <status>', 'active, paused, completed or cancelled')
    .option('--json', 'print JSON')
    .action((o: { status?: string; json?: boolean }) =>
      withPlatform('cli', async (p) => {
        const page = await p.schedules.service.list(LOCAL_PRINCIPAL, 200, null, o.status ?? null);
        if (o.json) print(true, page.items, '');
        else
          process.stdout.write(
            page.items.length === 0 ? 'no schedules\n' : page.items.map((s) => `${line(s)}\n`).join(''),
          );
        return EXIT.ok;
      }),
    );
  schedule
    .command('show')
    .description('one schedule')
    .argument('<schedule-id>')
    .option('--json', 'print JSON')
    .action((id: string, o: { json?: boolean }) =>
      withPlatform('cli', async (p) => {
        const s = await p.schedules.service.get(LOCAL_PRINCIPAL, id);
        print(o.json, s, `${line(s)}\nmessage: ${s.message}`);
        return EXIT.ok;
      }),
    );
  schedule
    .command('occurrences')
    .description("a schedule's occurrence ledger, newest first, with each run")
    .argument('<schedule-id>')
    .option('--json', 'print JSON')
    .action((id: string, o: { json?: boolean }) =>
      withPlatform('cli', async (p) => {
        const page = await p.schedules.service.occurrences(LOCAL_PRINCIPAL, id, 200, null);
        if (o.json) print(true, page.items, '');
        else
          process.stdout.write(
            page.items.length === 0 ? 'no occurrences yet\n' : page.items.map((x) => `${occurrenceLine(x)}\n`).join(''),
          );
        return EXIT.ok;
      }),
    );
}

function registerLifecycle(schedule: Command): void {
  const lifecycle = (verb: 'pause' | 'resume' | 'cancel', description: string) =>
    schedule
      .command(verb)
      .description(description)
      .argument('<schedule-id>')
      .option('--json', 'print JSON')
      .action((id: string, o: { json?: boolean }) =>
        withPlatform('cli', async (p) => {
          const svc = p.schedules.service;
          const s =
            verb === 'pause'
              ? await svc.pause(LOCAL_PRINCIPAL, id)
              : verb === 'resume'
                ? await svc.resume(LOCAL_PRINCIPAL, id)
                : await svc.cancel(LOCAL_PRINCIPAL, id);
          print(o.json, s, line(s));
          return EXIT.ok;
        }),
      );
  lifecycle('pause', 'pause a schedule (no firing until resumed)');
  lifecycle('resume', 'resume a schedule; its next firing is the first one after now (no backfill)');
  lifecycle('cancel', 'cancel a schedule for good (runs already started are not cancelled)');
}
