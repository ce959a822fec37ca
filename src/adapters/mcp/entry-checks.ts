import { ConfigurationError } from '../../domain/errors';
import { findSecret } from '../../domain/events/secret-scan';

/**
 * What the schema cannot say about one server entry (config/mcp.yaml and `POST /v1/mcp/servers`
 * alike, ADR 0052): the command is one executable, never a shell command line (it is spawned
 * without a shell; arguments go in `transport.args`), and no value looks like a credential (an
 * environment variable is named, in `transport.env_allowlist` or `transport.auth.env`, never
 * given). Refusals name the server and the field.
 */
export function checkServerEntry(
  s: { readonly id: string; readonly transport: { readonly type: string; readonly command?: string } },
  source: string,
): void {
  const refuse = (field: string, why: string) =>
    new ConfigurationError(`${source}: server ${s.id}: field ${field}: ${why}`, { server: s.id, field });
  const command = s.transport.type === 'stdio' ? (s.transport.command ?? '') : '';
  // `${VAR}` references are fine; whitespace, quotes and shell operators mean a command line.
  if (/[\s;&|<>`'"*?!]|\$\(|^~/.test(command.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*\}/g, '')))
    throw refuse(
      'transport.command',
      'must be one executable, not a shell command line (it runs without a shell; put arguments in transport.args)',
    );
  const secret = findSecret(s);
  if (secret)
    throw refuse(
      secret.path.replace(/\[(\d+)\]/g, '.$1'),
      `looks like a credential (${secret.kind}); name an environment variable instead (transport.env_allowlist or transport.auth.env)`,
    );
}
