import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The sandbox's `/etc`: one host directory holding a copy of the few `/etc` entries a program needs
 * to load and run (ADR 0018) plus the synthetic `passwd`/`group`. bubblewrap pays a mount and a full
 * `/proc/self/mountinfo` parse for every bind, so one bind instead of a dozen is a measurable part of
 * the per-command cost. With a `BaseLayout` the copy is a whole read-only root instead (the `/etc`
 * entries in `etc/`, plus what the layout adds: mountpoints, the top-level links, `/dev`), bound at
 * `/` in one mount.
 *
 * The copy follows the host: before a command the top-level sources are `lstat`ed and a changed one
 * (ldconfig, update-alternatives and update-ca-certificates all replace files by rename, which
 * changes the file or its directory) makes a fresh copy for the commands that start afterwards —
 * before every command, or at most every `recheckMs` (the ~17 lstat calls and the signature cost a
 * few hundred microseconds per command, so back-to-back commands share one check; a host change is
 * then followed within `recheckMs`). A copy stays until no command started with it still runs.
 * Only what any uid may read on the host is copied (files `o+r`, directories `o+rx`; modes are kept
 * without write bits), so the sandbox sees no more than a read-only bind would show it.
 */
export interface EtcVersion<L = undefined> {
  readonly dir: string;
  /** What the layout's `prepare` returned for this copy (undefined without a layout). */
  readonly layout: L | undefined;
  release(): void;
}

/** Turns the copy into a whole root directory (namespace-environment.ts). */
export interface BaseLayout<L> {
  /** Where in the copy the `/etc` entries and the synthetic files go (e.g. `etc`); default the top. */
  readonly etcDir?: string;
  /** Adds the rest of the tree to a fresh copy, before any command uses it; the result goes with the copy. */
  prepare(dir: string): Promise<L>;
  /** Folded into the signature checked before every command: a change makes a fresh copy. */
  signature(): string;
}

interface Built<L> {
  readonly dir: string;
  readonly signature: string;
  readonly layout: L | undefined;
  users: number;
  superseded: boolean;
}

const PREFIX = '.etc-';
const MAX_ENTRIES = 5000;
const MAX_BYTES = 64 * 1024 * 1024;

export class BaseEtc<L = undefined> {
  private current: Built<L> | null = null;
  private building: Promise<Built<L>> | null = null;
  private readonly mine = new Set<string>();
  private checkedAt = -Infinity;

  /**
   * @param root directory the copies are made in (every parent searchable by the sandbox uid)
   * @param entries paths relative to /etc, copied when present
   * @param synthetic files written into the copy (`passwd`, `group`)
   */
  constructor(
    private readonly root: string,
    private readonly entries: readonly string[],
    private readonly synthetic: Readonly<Record<string, string>>,
    private readonly etc = '/etc',
    private readonly layout?: BaseLayout<L>,
    /** Reuse the last check of the host's sources for this long (0: check before every acquire). */
    private readonly recheckMs = 0,
  ) {}

  /** An up-to-date copy, held until `release()`. */
  async acquire(): Promise<EtcVersion<L>> {
    let built = this.current;
    const now = performance.now();
    if (!built || now - this.checkedAt >= this.recheckMs) {
      const signature = this.signature();
      if (!built || built.signature !== signature) {
        this.building ??= this.build(signature).finally(() => (this.building = null));
        built = await this.building;
      }
      this.checkedAt = now;
    }
    built.users++;
    let released = false;
    return {
      dir: built.dir,
      layout: built.layout,
      release: () => {
        if (released) return;
        released = true;
        built.users--;
        this.collect(built);
      },
    };
  }

  /** Copies left by a process that is gone (removed at service start). */
  async removeOrphans(): Promise<number> {
    let n = 0;
    for (const name of await fs.promises.readdir(this.root).catch(() => [] as string[])) {
      const p = path.join(this.root, name);
      const m = /^\.etc-(\d+)-/.exec(name);
      if (!name.startsWith(PREFIX) || this.mine.has(p)) continue;
      if (m && alive(Number(m[1]))) continue; // a live process's (maybe another adapter in this one)
      await fs.promises.rm(p, { recursive: true, force: true }).catch(() => undefined);
      n++;
    }
    return n;
  }

  private signature(): string {
    // A missing entry is common (lib32, mime.types...): `throwIfNoEntry: false` spares building an
    // exception for it on every command.
    const parts = this.entries.map((e) => {
      try {
        const st = fs.lstatSync(path.join(this.etc, e), { throwIfNoEntry: false });
        return st ? `${e}:${st.ino}:${st.mode}:${st.size}:${st.mtimeMs}:${st.ctimeMs}` : `${e}:-`;
      } catch {
        return `${e}:?`;
      }
    });
    if (this.layout) parts.push(this.layout.signature());
    return parts.join('|');
  }

  private async build(signature: string): Promise<Built<L>> {
    if (this.current?.signature === signature) return this.current;
    const dir = path.join(this.root, `${PREFIX}${process.pid}-${randomUUID()}`);
    this.mine.add(dir);
    let layout: L | undefined;
    try {
      await fs.promises.mkdir(dir, { mode: 0o755 });
      await fs.promises.chmod(dir, 0o755);
      const etcDir = this.layout?.etcDir ? path.join(dir, this.layout.etcDir) : dir;
      if (etcDir !== dir) await fs.promises.mkdir(etcDir, { mode: 0o755 });
      const budget = { entries: MAX_ENTRIES, bytes: MAX_BYTES };
      for (const e of this.entries) await copyEntry(path.join(this.etc, e), path.join(etcDir, e), budget);
      for (const [name, content] of Object.entries(this.synthetic))
        await fs.promises.writeFile(path.join(etcDir, name), content, { mode: 0o644, flag: 'wx' });
      layout = await this.layout?.prepare(dir);
    } catch (e) {
      await removeTree(dir);
      this.mine.delete(dir);
      throw e;
    }
    const built: Built<L> = { dir, signature, layout, users: 0, superseded: false };
    const previous = this.current;
    this.current = built;
    if (previous) {
      previous.superseded = true;
      this.collect(previous);
    }
    return built;
  }

  private collect(b: Built<L>): void {
    if (!b.superseded || b.users > 0) return;
    this.mine.delete(b.dir);
    void removeTree(b.dir);
  }
}

/** Whether a process with this pid exists (EPERM: it does, under another uid). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Copies one entry (a file, a symlink as a symlink, or a directory tree) that others may read. */
async function copyEntry(src: string, dest: string, budget: { entries: number; bytes: number }): Promise<void> {
  const st = await fs.promises.lstat(src).catch(() => null);
  if (!st) return;
  if (--budget.entries < 0) throw new Error(`${src}: the sandbox's /etc copy would exceed ${MAX_ENTRIES} entries`);
  await fs.promises.mkdir(path.dirname(dest), { recursive: true, mode: 0o755 });
  if (st.isSymbolicLink()) {
    await fs.promises.symlink(await fs.promises.readlink(src), dest);
  } else if (st.isDirectory()) {
    if ((st.mode & 0o005) !== 0o005) return;
    await fs.promises.mkdir(dest, { mode: 0o755 });
    for (const name of await fs.promises.readdir(src))
      await copyEntry(path.join(src, name), path.join(dest, name), budget);
    // Owner-writable, so the service (not root, maybe) can remove the copy; the bind is read-only.
    await fs.promises.chmod(dest, (st.mode & 0o555) | 0o200);
  } else if (st.isFile()) {
    if ((st.mode & 0o004) === 0) return;
    // Opened without following a link and checked again: what is copied is what was checked.
    const h = await fs.promises.open(src, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    try {
      const now = await h.stat();
      if (!now.isFile() || (now.mode & 0o004) === 0) return;
      budget.bytes -= now.size;
      if (budget.bytes < 0) throw new Error(`${src}: the sandbox's /etc copy would exceed ${MAX_BYTES} bytes`);
      await fs.promises.writeFile(dest, await h.readFile(), { flag: 'wx', mode: now.mode & 0o555 });
      await fs.promises.chmod(dest, now.mode & 0o555);
    } finally {
      await h.close();
    }
  }
}

async function removeTree(dir: string): Promise<void> {
  await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => undefined);
}
