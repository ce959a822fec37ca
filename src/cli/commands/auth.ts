import * as path from 'node:path';
import type { Command } from 'commander';
import { addTokenToFile, USER_PRESET } from '../../composition/http';
import { loadDotEnv } from '../../config/settings';
import { EXIT, exitCodeFor } from '../exit-codes';

interface CreateOptions {
  tenant: string;
  principal: string;
  scopes?: string[];
  file?: string;
}

/**
 * `agent auth token create --tenant T --principal P [--scopes a b …]`: prints a new random bearer
 * token once and stores only its SHA-256 in AUTH_TOKENS_FILE (or --file). The API re-reads the file
 * when it changes, so no restart is needed.
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
    .option('--file <path>', 'tokens file (default: AUTH_TOKENS_FILE)')
    .action((opts: CreateOptions) => {
      loadDotEnv();
      const file = opts.file ?? process.env.AUTH_TOKENS_FILE;
      if (!file) {
        process.stderr.write('error: set AUTH_TOKENS_FILE or pass --file <path>\n');
        process.exit(EXIT.usage);
      }
      try {
        const scopes = (opts.scopes ?? [USER_PRESET])
          .flatMap((s) => s.split(','))
          .map((s) => s.trim())
          .filter((s) => s !== '');
        const created = addTokenToFile(
          path.resolve(file),
          { tenantId: opts.tenant, principalId: opts.principal, scopes },
          [],
        );
        process.stderr.write(`stored the hash in ${path.resolve(file)}; this token is shown only once:\n`);
        process.stdout.write(`${created}\n`);
        process.exit(EXIT.ok);
      } catch (e) {
        process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
        process.exit(exitCodeFor(e) === EXIT.unavailable ? EXIT.usage : exitCodeFor(e));
      }
    });
}
