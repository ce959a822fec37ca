import { runExecutionService } from '../composition/sandbox-service';
import { EXIT, exitCodeFor } from './exit-codes';

/**
 * Runs `agent sandboxd` to its exit. The entry point (src/main.ts) reaches this module without
 * loading the rest of the CLI: the service forks a sandbox for every command, and a fork's cost grows
 * with the forking process's memory (measured here: a spawn from a ~50 MB Node process ~3 ms, from a
 * ~160 MB one — the whole CLI loaded — ~20 ms). So the service loads only its own modules.
 */
export function runSandboxd(): void {
  runExecutionService().then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`error: sandboxd: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(e instanceof Error && 'code' in e ? exitCodeFor(e) : EXIT.unavailable);
    },
  );
}
