/** Nudges that work may be available (NOTIFY run_ready). Never carries the work; a slow poll backs it up. */
export interface WakeupSource {
  start(onWake: () => void): Promise<void>;
  stop(): Promise<void>;
}
