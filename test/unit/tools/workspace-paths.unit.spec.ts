import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  normalizeWorkspacePath,
  resolveExisting,
  resolveForWrite,
  sessionWorkspace,
  PathOutsideWorkspace,
} from '../../../src/tools/workspace/paths';
import { createWorkspaceTools } from '../../../src/tools/workspace/workspace-tools';
import { toolContext } from './tool-context';

describe('normalizeWorkspacePath', () => {
  it.each([
    '/etc/passwd',
    '\\\\server\\share',
    'C:\\Windows',
    '~/x',
    '../x',
    'a/../../b',
    'a/..',
    'a\\..\\..\\b',
    '',
    '.',
    'a\0b',
  ])('refuses %j', (p) => {
    expect(normalizeWorkspacePath(p).ok).toBe(false);
  });
  it('canonicalizes relative paths', () => {
    expect(normalizeWorkspacePath('./a//b/./c.txt')).toEqual({ ok: true, path: 'a/b/c.txt' });
    expect(normalizeWorkspacePath('', true)).toEqual({ ok: true, path: '' });
    expect(normalizeWorkspacePath(42).ok).toBe(false);
  });
});

describe('real-path checks', () => {
  let root: string;
  let outside: string;
  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'ws-root-'));
    outside = fs.mkdtempSync(path.join(os.tmpdir(), 'ws-outside-'));
    fs.writeFileSync(path.join(outside, 'secret'), 's');
  });
  afterAll(() => {
    fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(outside, { recursive: true, force: true });
  });

  it('isolates tenants and sessions and never uses an id as a path', async () => {
    const a = await sessionWorkspace(root, 't1', 's1');
    const b = await sessionWorkspace(root, '../t1', 's1');
    expect(a).toBe(fs.realpathSync(path.join(root, 't1', 's1')));
    expect(b.startsWith(fs.realpathSync(root))).toBe(true);
    expect(b).not.toBe(a);
  });

  it('refuses symlinks (file, directory, dangling) that resolve outside', async () => {
    const ws = await sessionWorkspace(root, 't', 'links');
    fs.symlinkSync(path.join(outside, 'secret'), path.join(ws, 'file-link'));
    fs.symlinkSync(outside, path.join(ws, 'dir-link'));
    fs.symlinkSync(path.join(outside, 'missing'), path.join(ws, 'dangling'));
    await expect(resolveExisting(ws, 'file-link')).rejects.toBeInstanceOf(PathOutsideWorkspace);
    await expect(resolveExisting(ws, 'dir-link/secret')).rejects.toBeInstanceOf(PathOutsideWorkspace);
    await expect(resolveExisting(ws, 'dangling')).rejects.toBeInstanceOf(PathOutsideWorkspace);
    await expect(resolveForWrite(ws, 'dir-link/new.txt')).rejects.toBeInstanceOf(PathOutsideWorkspace);
    await expect(resolveForWrite(ws, 'dangling')).rejects.toBeInstanceOf(PathOutsideWorkspace);
    expect(await resolveExisting(ws, 'nothing-here')).toBeNull();
    expect(await resolveForWrite(ws, 'sub/dir/new.txt')).toBe(path.join(ws, 'sub', 'dir', 'new.txt'));
  });

  it('writes with size and SHA-256 and lists within bounds without following links', async () => {
    const [read, write, list] = createWorkspaceTools({ root });
    const ctx = { ...toolContext(), tenantId: 't', sessionId: 'tools' };
    const w = await write.execute({ path: 'a.txt', content: 'abc' }, ctx);
    expect(w).toEqual({
      ok: true,
      output: {
        path: 'a.txt',
        size_bytes: 3,
        sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      },
    });
    const r = await read.execute({ path: 'a.txt' }, ctx);
    expect(r.ok && r.output.content).toBe('abc');
    const ws = await sessionWorkspace(root, 't', 'tools');
    fs.symlinkSync(outside, path.join(ws, 'out'));
    for (let i = 0; i < 5; i++) fs.writeFileSync(path.join(ws, `f${i}.txt`), 'x');
    const l = await list.execute({ limit: 3 }, ctx);
    expect(l.ok && l.output).toEqual({
      files: [
        { path: 'a.txt', size_bytes: 3 },
        { path: 'f0.txt', size_bytes: 1 },
        { path: 'f1.txt', size_bytes: 1 },
      ],
      truncated: true,
    });
    expect(read.normalize?.({ path: '../x' })).toMatchObject({ ok: false, errorCode: 'path_outside_workspace' });
  });
});
