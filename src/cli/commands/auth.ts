import * as path from 'node:path';
import type { Command } from 'commander';
import { addTokenToFile, expiryFrom, listTokens, revokeToken, USER_PRESET } from '../../composition/http';
import { loadDotEnv } from '../../config/settings';
import { EXIT, exitCodeFor } from '../exit-codes';

interface CreateOptions {
  tenant: string;
  principal: string;
  scopes?: string[];
  file?: string;
  expiresIn?: string;
  expiresAt?: string;
}

function tokensFile(opts: { file?: string }): string {
  loadDotEnv();
  const file = opts.file ?? process.env.AUTH_TOKENS_FILE;
  if (!file) {
    process.stderr.write('error: set AUTH_TOKENS_FILE or pass --file <path>\n');
    process.exit(EXIT.usage);
  }
  return path.resolve(file);
}

function failed(e: unknown): never {
  process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(exitCodeFor(e) === EXIT.unavailable ? EXIT.usage : exitCodeFor(e));
}

/**
 * `agent auth token create|list|revoke` (ADR 0032). `create` prints a new random bearer token once
 * and stores only its SHA-256 in AUTH_TOKENS_FILE (or --file), optionally with an expiry; `list`
 * shows every token's id, owner, scopes and status, never a token; `revoke <id>` stamps it revoked.
 * Every API process re-reads the file on its next request (and on SIGHUP), so no restart is needed.
 */
export function registerAuthCommands(program: Command): void {
  const auth = program.command('auth').description('API authentication (AUTH_MODE=token)');
  const token = auth.command('token').description('bearer tokens stored by hash in AUTH_TOKENS_FILE');
  token
    .command('create')
    .description('create a token for a tenant and principal; the token is printed once and only its hash is stored')
    .requiredOption('--tenant <tenant>', 'tenant id')
    .requiredOption('--principal <principal>', 'principal id')
    .option(
      '--scopes <scopes...>',
      `scope names, or "${USER_PRESET}" for every API scope and the builtin tools' scopes`,
      [USER_PRESET],
    )
    .option('--expires-in <duration>', 'the token stops working after this long: 45s, 90m, 12h, 30d')
    .option('--expires-at <instant>', 'the token stops working at this ISO-8601 instant')
    .option('--file <path>', 'tokens file (default: AUTH_TOKENS_FILE)')
    .action((opts: CreateOptions) => {
      const file = tokensFile(opts);
      try {
        const scopes = (opts.scopes ?? [USER_PRESET])
          .flatMap((s) => s.split(','))
          .map((s) => s.trim())
          .filter((s) => s !== '');
        const expiresAt = expiryFrom(opts);
        const created = addTokenToFile(
          file,
          { tenantId: opts.tenant, principalId: opts.principal, scopes, expiresAt },
          [],
        );
        const until = expiresAt ? ` (valid until ${expiresAt})` : '';
        process.stderr.write(`stored the hash in ${file}${until}; this token is shown only once:\n`);
        process.stdout.write(`${created}\n`);
        process.exit(EXIT.ok);
      } catch (e) {
        failed(e);
      }
    });
  token
    .command('list')
    .description('list the tokens of the file: id, tenant, principal, scopes, expiry and status (never a token)')
    .option('--json', 'one JSON object per token')
    .option('--file <path>', 'tokens file (default: AUTH_TOKENS_FILE)')
    .action((opts: { file?: string; json?: boolean }) => {
      const file = tokensFile(opts);
      try {
        const rows = listTokens(file);
        if (opts.json) for (const r of rows) process.stdout.write(`${JSON.stringify(r)}\n`);
        else {
          process.stdout.write('ID            STATUS   TENANT/PRINCIPAL  EXPIRES                   SCOPES\n');
          for (const r of rows) {
            const scopes = typeof r.scopes === 'string' ? r.scopes : r.scopes.join(',');
            const owner = `${r.tenantId}/${r.principalId}`;
            process.stdout.write(
              `${r.id}  ${r.status.padEnd(7)}  ${owner.padEnd(16)}  ${(r.expiresAt ?? 'never').padEnd(24)}  ${scopes}\n`,
            );
          }
        }
        process.exit(EXIT.ok);
      } catch (e) {
        failed(e);
      }
    });
  token
    .command('revoke <id>')
    .description('revoke a token by its id (from `agent auth token list`); it stops working on the next request')
    .option('--file <path>', 'tokens file (default: AUTH_TOKENS_FILE)')
    .action((id: string, opts: { file?: string }) => {
      const file = tokensFile(opts);
      try {
        const r = revokeToken(file, id);
        const who = `${r.token.tenantId}/${r.token.principalId}`;
        process.stdout.write(
          r.alreadyRevoked
            ? `token ${r.token.id} (${who}) was already revoked at ${r.token.revokedAt}\n`
            : `revoked token ${r.token.id} (${who}); every API process refuses it from its next request\n`,
        );
        process.exit(EXIT.ok);
      } catch (e) {
        failed(e);
      }
    });
}
