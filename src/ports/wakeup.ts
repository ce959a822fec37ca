/**
 * Nudges that work may be available (NOTIFY run_ready, run_join). Never carries the work; a slow poll
 * backs it up. `runId`, when the nudge names one, is the run it is about: on run_ready a run a worker
 * may have been asked to stop (issue 33), on run_join the parent whose child ended (ADR 0037).
 */
export interface WakeupSource {
  /** `runId`: the run the notification names (absent for a (re)connect or a nudge that names none). */
  start(onWake: (runId?: string) => void): Promise<void>;
  stop(): Promise<void>;
}
