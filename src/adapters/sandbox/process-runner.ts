import { spawn, type ChildProcess } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import type { ChangedFile, ExecuteOptions, ExecutionResult, KillReason } from '../../ports/execution-environment';

/**
 * Runs one sandbox launcher process (bwrap, docker run, ...) under the service's own enforcement:
 * a wall-clock kill, an output byte cap, an optional quota probe, and cancellation. The whole
 * process group is killed (SIGKILL) on any of them; the launcher's own flags make the sandbox's
 * process tree die with it (bwrap --die-with-parent + PID namespace, docker --rm / kill).
 */
export interface RunSpec {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Record<string, string>;
  /** Descriptors handed to the launcher as fd 3, 4, ...; `'pipe'` makes a socket pair (`child.stdio[n]`). */
  readonly extraFds?: readonly (number | 'pipe')[];
  /** Called once the launcher is spawned (e.g. to move the sandbox into its cgroup, then release it). */
  readonly onSpawn?: (child: ChildProcess, kill: (reason: KillReason, detail: string) => void) => void;
  /** Wraps the (synchronous) spawn, e.g. to fork the launcher from another network namespace. */
  readonly spawnWith?: (spawnLauncher: () => ChildProcess) => ChildProcess;
  /** Host uid/gid to run the launcher as (only when the service runs as root). */
  readonly uid?: number;
  readonly gid?: number;
  readonly wallClockMs: number;
  readonly maxOutputBytes: number;
  /** Polled every `probeEveryMs` while running; a returned reason kills the command with it. */
  readonly probe?: () => Promise<{ reason: KillReason; detail: string } | null>;
  readonly probeEveryMs?: number;
  /** Extra cleanup when the service kills (e.g. `docker kill <name>`). */
  readonly onKill?: () => void;
}

export interface RawOutcome {
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** Set when the service stopped the command. */
  readonly serviceReason: { reason: KillReason; detail: string } | null;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  readonly outputTruncated: boolean;
  readonly durationMs: number;
  readonly pid: number | undefined;
}

export function runLauncher(spec: RunSpec, opts: ExecuteOptions = {}): Promise<RawOutcome> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const spawnLauncher = () =>
      spawn(spec.file, spec.args as string[], {
        env: spec.env,
        stdio: ['ignore', 'pipe', 'pipe', ...(spec.extraFds ?? [])],
        detached: true, // its own process group, so the whole group can be killed
        ...(spec.uid !== undefined ? { uid: spec.uid, gid: spec.gid } : {}),
      });
    const child = spec.spawnWith ? spec.spawnWith(spawnLauncher) : spawnLauncher();
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let captured = 0;
    let truncated = false;
    let serviceReason: RawOutcome['serviceReason'] = null;
    let finished = false;
    const kill = (reason: KillReason, detail: string) => {
      if (serviceReason || finished) return;
      serviceReason = { reason, detail };
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
      spec.onKill?.();
    };
    const onData = (stream: 'stdout' | 'stderr', into: Buffer[]) => (chunk: Buffer) => {
      opts.onOutput?.(stream, chunk);
      const room = spec.maxOutputBytes - captured;
      if (room <= 0) return;
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      into.push(part);
      captured += part.length;
      if (chunk.length > room || captured >= spec.maxOutputBytes) {
        truncated = chunk.length > room;
        if (captured >= spec.maxOutputBytes) {
          truncated = true;
          kill('output', `stdout and stderr exceeded ${spec.maxOutputBytes} bytes`);
        }
      }
    };
    spec.onSpawn?.(child, kill);
    child.stdout!.on('data', onData('stdout', out));
    child.stderr!.on('data', onData('stderr', err));
    const wall = setTimeout(
      () => kill('timeout', `wall-clock limit of ${Math.round(spec.wallClockMs / 100) / 10}s reached`),
      spec.wallClockMs,
    );
    let probing = false;
    const probeTimer = spec.probe
      ? setInterval(() => {
          if (probing || finished) return;
          probing = true;
          spec.probe!()
            .then((r) => {
              if (r) kill(r.reason, r.detail);
            })
            .catch(() => undefined)
            .finally(() => {
              probing = false;
            });
        }, spec.probeEveryMs ?? 250)
      : null;
    const onAbort = () => kill('cancelled', 'cancelled by the caller');
    if (opts.signal?.aborted) onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.once('error', (e) => {
      finished = true;
      clearTimeout(wall);
      if (probeTimer) clearInterval(probeTimer);
      opts.signal?.removeEventListener('abort', onAbort);
      reject(e);
    });
    child.once('close', (code, signal) => {
      finished = true;
      clearTimeout(wall);
      if (probeTimer) clearInterval(probeTimer);
      opts.signal?.removeEventListener('abort', onAbort);
      // Anything left in the group (there should be nothing) goes too.
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
      resolve({
        exitCode: code,
        signal,
        serviceReason,
        stdout: Buffer.concat(out),
        stderr: Buffer.concat(err),
        outputTruncated: truncated,
        durationMs: Date.now() - started,
        pid: child.pid,
      });
    });
  });
}

const SIGNAL_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(osConstants.signals).map(([name, n]) => [n, name]),
);

/**
 * Maps an outcome to a KillReason (ADR 0018). The service's own kills (timeout, output, disk quota,
 * cancelled) are authoritative; then the terminating signal (SIGXCPU → cpu, SIGXFSZ → disk,
 * SIGKILL after the CPU hard limit → cpu); then, for a non-zero exit, the errno the kernel gave the
 * program when a limit refused it, as reported on stderr (ENOMEM/MemoryError → memory,
 * EFBIG/ENOSPC/EDQUOT → disk, EAGAIN from fork/clone → pids). A program that prints such a message
 * itself only mislabels its own failure.
 */
export function classify(
  raw: Pick<RawOutcome, 'exitCode' | 'signal' | 'serviceReason' | 'stderr'>,
  launcherReportsSignalsAs128Plus: boolean,
): { reason: KillReason; detail: string; exitCode: number | null; signal: string | null } {
  if (raw.serviceReason) return { ...raw.serviceReason, exitCode: null, signal: raw.signal ?? 'SIGKILL' };
  let exitCode = raw.exitCode;
  let signal = raw.signal;
  if (
    signal === null &&
    launcherReportsSignalsAs128Plus &&
    exitCode !== null &&
    exitCode > 128 &&
    exitCode < 128 + 65
  ) {
    signal = SIGNAL_NAMES[exitCode - 128] ?? null;
    if (signal) exitCode = null;
  }
  if (signal === 'SIGXCPU') return { reason: 'cpu', detail: 'CPU time limit reached (SIGXCPU)', exitCode, signal };
  if (signal === 'SIGXFSZ') return { reason: 'disk', detail: 'file size limit reached (SIGXFSZ)', exitCode, signal };
  const tail = raw.stderr.subarray(Math.max(0, raw.stderr.length - 8192)).toString('utf8');
  if (exitCode !== 0 || signal !== null) {
    if (
      /MemoryError|Cannot allocate memory|out of memory|std::bad_alloc|ENOMEM|heap out of memory|memory exhausted/i.test(
        tail,
      )
    )
      return { reason: 'memory', detail: 'memory limit reached (allocation refused)', exitCode, signal };
    if (/File too large|No space left on device|Disk quota exceeded|EFBIG|ENOSPC|EDQUOT/i.test(tail))
      return { reason: 'disk', detail: 'disk limit reached (file size or space)', exitCode, signal };
    if (
      /(fork|clone|thread|spawn|BlockingIOError)[^\n]*(Resource temporarily unavailable|EAGAIN)|Resource temporarily unavailable[^\n]*(fork|clone|thread)|BlockingIOError: \[Errno 11\]|can't start new thread/i.test(
        tail,
      )
    )
      return { reason: 'pids', detail: 'process limit reached (fork refused)', exitCode, signal };
  }
  return {
    reason: 'exited',
    detail: signal ? `terminated by ${signal}` : `exited with code ${exitCode}`,
    exitCode,
    signal,
  };
}

/** The port's result: a launcher's outcome as `classify` (or an adapter's refinement of it) labelled it. */
export function executionResult(
  raw: RawOutcome,
  c: ReturnType<typeof classify>,
  filesChanged: readonly ChangedFile[],
): ExecutionResult {
  return {
    exitCode: c.exitCode,
    signal: c.signal,
    reason: c.reason,
    reasonDetail: c.detail,
    stdout: raw.stdout,
    stderr: raw.stderr,
    outputTruncated: raw.outputTruncated,
    durationMs: raw.durationMs,
    filesChanged,
  };
}
