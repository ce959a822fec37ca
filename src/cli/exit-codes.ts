import { AgentError } from '../domain/errors';

/** The CLI's documented exit codes (README "CLI"). */
export const EXIT = {
  ok: 0,
  /** The run (or an eval case, or a verify) finished but did not succeed. */
  failed: 1,
  /** Bad usage or invalid input: nothing was changed. */
  usage: 2,
  notFound: 3,
  conflict: 4,
  /** Infrastructure: the database or configuration is unusable. */
  unavailable: 5,
  interrupted: 130,
} as const;

export function exitCodeFor(e: unknown): number {
  if (!(e instanceof AgentError)) return EXIT.unavailable;
  switch (e.code) {
    case 'validation_error':
    case 'invalid_event_payload':
    case 'secret_in_payload':
    case 'unknown_event_type':
      return EXIT.usage;
    case 'not_found':
      return EXIT.notFound;
    case 'conflict':
    case 'concurrency_conflict':
    case 'invalid_state_transition':
      return EXIT.conflict;
    default:
      return EXIT.unavailable;
  }
}
