import type { Command } from 'commander';
import { ValidationError } from '../../domain/errors';
import type { NotificationPreferences } from '../../domain/notifications/preferences';
import { LOCAL_PRINCIPAL, type Principal } from '../../domain/principal';
import { withPlatform } from '../context';
import { EXIT } from '../exit-codes';

interface PrefsOpts {
  principal: string;
  tenant: string;
  set: string[];
  content?: string;
  quiet?: string;
  zone?: string;
  clearQuiet?: boolean;
  json?: boolean;
}

/** The wire shape of preferences (what `PUT /v1/notifications/preferences` takes). */
function wire(p: NotificationPreferences): Record<string, unknown> {
  return { kinds: p.kinds, content: p.content, quiet_hours: p.quietHours };
}

/** The current preferences with the command's changes applied; null when it asks for none. */
function changed(current: NotificationPreferences, o: PrefsOpts): Record<string, unknown> | null {
  if (o.set.length === 0 && o.content === undefined && o.quiet === undefined && !o.clearQuiet) return null;
  if (o.quiet !== undefined && o.clearQuiet) throw new ValidationError('--quiet and --clear-quiet exclude each other');
  const next = wire(current);
  const kinds: Record<string, unknown> = { ...current.kinds };
  for (const pair of o.set) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new ValidationError(`--set takes <kind>=<channel>, not ${pair}`, { field: 'set' });
    kinds[pair.slice(0, at)] = pair.slice(at + 1);
  }
  next.kinds = kinds;
  if (o.content !== undefined) next.content = o.content;
  if (o.clearQuiet) next.quiet_hours = null;
  if (o.quiet !== undefined) {
    const m = /^(\S+)-(\S+)$/.exec(o.quiet);
    const zone = o.zone ?? current.quietHours?.zone;
    if (!m) throw new ValidationError('--quiet takes <HH:MM>-<HH:MM>, e.g. 22:00-07:00', { field: 'quiet' });
    if (!zone) throw new ValidationError('--quiet needs --zone <IANA zone>, e.g. Europe/Berlin', { field: 'zone' });
    next.quiet_hours = { start: m[1], end: m[2], zone };
  }
  return next;
}

function print(p: NotificationPreferences, who: string): void {
  const lines = [`notification preferences of ${who}`];
  for (const [kind, channel] of Object.entries(p.kinds)) lines.push(`  ${kind.padEnd(22)} ${channel}`);
  lines.push(`  content                ${p.content === 'none' ? 'none (content-free)' : p.content}`);
  const q = p.quietHours;
  lines.push(
    `  quiet hours            ${q ? `${q.start}-${q.end} ${q.zone} (webhooks wait; the inbox does not)` : 'none'}`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** `agent notifications prefs`: show or change a principal's notification preferences (issue 31 item 4). */
export function registerNotificationCommands(program: Command): void {
  const notifications = program
    .command('notifications')
    .description('notification preferences: per kind inbox|webhook|both|none, content, quiet hours');
  notifications
    .command('prefs')
    .description(
      'show a principal’s notification preferences, or change them: per kind inbox|webhook|both|none, content none|full, quiet hours in an IANA zone',
    )
    .option('--principal <id>', 'the principal', LOCAL_PRINCIPAL.principalId)
    .option('--tenant <tenant>', 'its tenant', LOCAL_PRINCIPAL.tenantId)
    .option(
      '--set <kind=channel>',
      'route a kind: inbox, webhook, both or none (repeatable)',
      (v, all: string[]) => [...all, v],
      [],
    )
    .option('--content <level>', 'none (content-free, the default) or full')
    .option('--quiet <HH:MM-HH:MM>', 'quiet hours: webhook deliveries wait until they end')
    .option('--zone <zone>', 'the IANA time zone of the quiet hours, e.g. Europe/Berlin')
    .option('--clear-quiet', 'remove the quiet hours')
    .option('--json', 'print JSON')
    .action((opts: PrefsOpts) =>
      withPlatform('notification-prefs', async (p) => {
        const principal: Principal = { ...LOCAL_PRINCIPAL, tenantId: opts.tenant, principalId: opts.principal };
        const store = p.notifications.preferences;
        const current = await store.get(principal);
        const next = changed(current, opts);
        const result = next === null ? current : await store.put(principal, next);
        if (opts.json) process.stdout.write(`${JSON.stringify(wire(result))}\n`);
        else print(result, `${opts.tenant}/${opts.principal}`);
        return EXIT.ok;
      }),
    );
}
