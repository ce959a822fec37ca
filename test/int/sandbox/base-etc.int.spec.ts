import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BaseEtc } from '../../../src/adapters/sandbox/base-etc';

/** The namespace sandbox's /etc copy (base-etc.ts), against a real directory standing in for /etc. */
let dir: string;
let etc: string;
let root: string;
const copies = () => fs.readdirSync(root).filter((n) => n.startsWith('.etc-'));

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'base-etc-'));
  etc = path.join(dir, 'etc');
  root = path.join(dir, 'root');
  fs.mkdirSync(path.join(etc, 'ssl', 'certs'), { recursive: true });
  fs.mkdirSync(root);
  fs.writeFileSync(path.join(etc, 'ld.so.cache'), 'cache-v1', { mode: 0o644 });
  fs.writeFileSync(path.join(etc, 'ssl', 'certs', 'ca.pem'), 'ca', { mode: 0o644 });
  fs.symlinkSync('/usr/share/zoneinfo/Etc/UTC', path.join(etc, 'localtime'));
  fs.writeFileSync(path.join(etc, 'private.conf'), 'secret', { mode: 0o600 });
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const make = () =>
  new BaseEtc(root, ['ld.so.cache', 'ssl/certs', 'localtime', 'private.conf', 'missing'], { passwd: 'p\n' }, etc);

describe('the sandbox /etc copy', () => {
  it('copies files, directories and symlinks that others may read, plus the synthetic files', async () => {
    const v = await make().acquire();
    expect(fs.readFileSync(path.join(v.dir, 'ld.so.cache'), 'utf8')).toBe('cache-v1');
    expect(fs.readFileSync(path.join(v.dir, 'ssl', 'certs', 'ca.pem'), 'utf8')).toBe('ca');
    expect(fs.readlinkSync(path.join(v.dir, 'localtime'))).toBe('/usr/share/zoneinfo/Etc/UTC');
    expect(fs.readFileSync(path.join(v.dir, 'passwd'), 'utf8')).toBe('p\n');
    // Not readable by others on the host: a bind would not have shown it to the sandbox uid either.
    expect(fs.existsSync(path.join(v.dir, 'private.conf'))).toBe(false);
    expect(fs.existsSync(path.join(v.dir, 'missing'))).toBe(false);
    expect(fs.statSync(path.join(v.dir, 'ld.so.cache')).mode & 0o222).toBe(0);
    v.release();
  });

  it('reuses the copy while the sources are unchanged', async () => {
    const b = make();
    const a1 = await b.acquire();
    const a2 = await b.acquire();
    expect(a2.dir).toBe(a1.dir);
    expect(copies()).toHaveLength(1);
  });

  it('makes a fresh copy when a source is replaced, and removes the old one once no command holds it', async () => {
    const b = make();
    const old = await b.acquire();
    // ldconfig writes a new cache and renames it over the old one.
    fs.writeFileSync(path.join(etc, 'ld.so.cache.new'), 'cache-v2', { mode: 0o644 });
    fs.renameSync(path.join(etc, 'ld.so.cache.new'), path.join(etc, 'ld.so.cache'));
    const fresh = await b.acquire();
    expect(fresh.dir).not.toBe(old.dir);
    expect(fs.readFileSync(path.join(fresh.dir, 'ld.so.cache'), 'utf8')).toBe('cache-v2');
    // A command started with the old copy still sees it ...
    expect(fs.readFileSync(path.join(old.dir, 'ld.so.cache'), 'utf8')).toBe('cache-v1');
    old.release();
    // ... and it goes once that command is done.
    for (let i = 0; i < 100 && fs.existsSync(old.dir); i++) await new Promise((r) => setTimeout(r, 10));
    expect(fs.existsSync(old.dir)).toBe(false);
    expect(copies()).toEqual([path.basename(fresh.dir)]);
    fresh.release();
    expect(fs.existsSync(fresh.dir)).toBe(true);
  });

  it("removes the copies of a process that is gone, not its own or a live process's", async () => {
    const gone = spawnSync('/bin/true').pid; // exited and reaped: no process has this pid now
    fs.mkdirSync(path.join(root, `.etc-${gone}-left-over`));
    fs.mkdirSync(path.join(root, '.etc-no-pid'));
    fs.mkdirSync(path.join(root, `.etc-${process.ppid}-live`));
    const b = make();
    const v = await b.acquire();
    expect(await b.removeOrphans()).toBe(2);
    expect(copies().sort()).toEqual([`.etc-${process.ppid}-live`, path.basename(v.dir)].sort());
  });

  it('copies a symlink as a symlink, even one that points at a private file', async () => {
    fs.symlinkSync(path.join(etc, 'private.conf'), path.join(etc, 'ssl', 'certs', 'link.pem'));
    const v = await make().acquire();
    // The link is copied as a link (dangling inside the sandbox), never as the private file's content.
    expect(fs.lstatSync(path.join(v.dir, 'ssl', 'certs', 'link.pem')).isSymbolicLink()).toBe(true);
    v.release();
  });

  it('with a layout, puts the entries in its etc directory and keeps what prepare made with the copy', async () => {
    let layoutVersion = 'v1';
    const b = new BaseEtc<string>(root, ['ld.so.cache', 'ssl/certs'], { passwd: 'p\n' }, etc, {
      etcDir: 'etc',
      prepare: async (d) => {
        fs.mkdirSync(path.join(d, 'usr'));
        return `prepared ${path.basename(d)}`;
      },
      signature: () => layoutVersion,
    });
    const v = await b.acquire();
    expect(fs.readFileSync(path.join(v.dir, 'etc', 'ld.so.cache'), 'utf8')).toBe('cache-v1');
    expect(fs.readFileSync(path.join(v.dir, 'etc', 'passwd'), 'utf8')).toBe('p\n');
    expect(fs.existsSync(path.join(v.dir, 'usr'))).toBe(true);
    expect(v.layout).toBe(`prepared ${path.basename(v.dir)}`);
    v.release();
    layoutVersion = 'v2'; // the layout's own sources changed (e.g. /lib became a link)
    const fresh = await b.acquire();
    expect(fresh.dir).not.toBe(v.dir);
    expect(fresh.layout).toBe(`prepared ${path.basename(fresh.dir)}`);
    fresh.release();
  });

  it('with recheckMs, one check of the sources serves that long, and a replaced source is followed after it', async () => {
    const b = new BaseEtc(root, ['ld.so.cache'], { passwd: 'p\n' }, etc, undefined, 300);
    const first = await b.acquire();
    first.release();
    fs.writeFileSync(path.join(etc, 'ld.so.cache.new'), 'cache-v2', { mode: 0o644 });
    fs.renameSync(path.join(etc, 'ld.so.cache.new'), path.join(etc, 'ld.so.cache'));
    const soon = await b.acquire();
    expect(soon.dir).toBe(first.dir);
    soon.release();
    await new Promise((r) => setTimeout(r, 350));
    const later = await b.acquire();
    expect(later.dir).not.toBe(first.dir);
    expect(fs.readFileSync(path.join(later.dir, 'ld.so.cache'), 'utf8')).toBe('cache-v2');
    later.release();
  });
});
