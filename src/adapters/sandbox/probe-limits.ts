import type { ResourceLimits } from '../../domain/sandbox/limits';

/**
 * Small limits for a probe command (the adapter's self-check, `agent doctor`'s isolation check): one
 * short program that reads a file or two, never a run's workload.
 */
export const PROBE_LIMITS: ResourceLimits = {
  wallClockSeconds: 10,
  cpuSeconds: 5,
  memoryBytes: 512 * 1024 * 1024,
  maxProcesses: 16,
  maxFileBytes: 1024 * 1024,
  workspaceBytes: 1024 * 1024,
  workspaceFiles: 100,
  tmpBytes: 1024 * 1024,
  maxOpenFiles: 64,
  maxOutputBytes: 4096,
};
