/** Ceilings a sandbox runs under; every one is enforced by the execution service, not by the program. */
export interface ResourceLimits {
  /** Hard wall-clock kill, enforced by the service (seconds). */
  readonly wallClockSeconds: number;
  /** CPU time (RLIMIT_CPU / container cpu quota), seconds. */
  readonly cpuSeconds: number;
  /** Address space / memory limit, bytes. */
  readonly memoryBytes: number;
  /** Processes and threads (RLIMIT_NPROC / --pids-limit). */
  readonly maxProcesses: number;
  /** Largest single file (RLIMIT_FSIZE), bytes. */
  readonly maxFileBytes: number;
  /** Whole-workspace quota (bytes), checked by the service while the command runs. */
  readonly workspaceBytes: number;
  /** Files and directories the workspace may hold (inode quota). */
  readonly workspaceFiles: number;
  /** Size of the scratch tmpfs mounted at /tmp, bytes. */
  readonly tmpBytes: number;
  /** Open file descriptors (RLIMIT_NOFILE). */
  readonly maxOpenFiles: number;
  /** stdout + stderr bytes captured before the command is killed with `output`. */
  readonly maxOutputBytes: number;
}
