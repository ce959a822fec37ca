import { AtomicLineFile as FileOnDisk } from '../adapters/trajectory/export-file';
import type { ConsentRegistry, LineFile, TrajectoryExportJobs, TrajectoryExports } from '../ports/trajectory';

export { TrajectoryVerificationError } from '../domain/errors';

/** Export files for the CLI: written under a temporary name, moved into place when complete. */
export const AtomicLineFile = {
  /** Checks the target can be written before any work starts (clear error, nothing created). */
  open: (target: string): LineFile => FileOnDisk.open(target),
  /** A file under the system's temporary directory. */
  temporary: (): LineFile => FileOnDisk.temporary(),
};
export type AtomicLineFile = LineFile;

/** Trajectory export (plan §31, docs/trajectories.md): the exporter, consent records and HTTP export jobs. */
export interface Trajectories {
  readonly exporter: TrajectoryExports;
  readonly consent: ConsentRegistry;
  readonly jobs: TrajectoryExportJobs;
}
