import * as fs from 'node:fs';
import type { LinuxProcessControls } from './linux-process';

/**
 * One environment's network namespace, held open by a descriptor in the service (ADR 0018): made
 * once at provision by the service's own thread (linux-process.ts) in the service's — the host's —
 * user namespace, so nothing the sandbox's uid owns; it has only a loopback, which stays down. Each
 * of the environment's commands is forked from a thread moved into it.
 *
 * The descriptor, not a process, keeps the namespace alive: there is no holder process whose pid
 * could be reused, and the namespace goes when the service closes the descriptor or dies — nothing
 * is left on the host (no bind mount, no process). Node opens files with O_CLOEXEC, so no child
 * inherits it.
 */
export class HeldNetworkNamespace {
  private closed = false;

  private constructor(private readonly descriptor: number) {}

  /** The service's descriptor of the namespace; throws once closed (its number may be reused). */
  get fd(): number {
    if (this.closed) throw new Error("the environment's network namespace was released (the environment is gone)");
    return this.descriptor;
  }

  /** Makes a namespace (never the service's own: `newNetworkNamespace` checks). */
  static create(controls: LinuxProcessControls): HeldNetworkNamespace {
    return new HeldNetworkNamespace(controls.newNetworkNamespace());
  }

  /** Releases the namespace (it goes once no process is in it). Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    fs.closeSync(this.descriptor);
  }
}
