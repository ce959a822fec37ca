import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ChangedFile, SeedFile } from '../../ports/execution-environment';
import { normalizeWorkspacePath, resolveForWrite, sessionWorkspace } from '../workspace/paths';
import type { SessionWorkspaceAccess } from './run-command';

const MAX_SEED_FILES = 1000;

/**
 * The session workspace as `sandbox.run_command` sees it from the worker: its regular files are
 * copied into each fresh sandbox, and the files a command changed are written back (through the
 * same symlink-refusing path checks as workspace.write_text). The sandbox itself never sees the
 * host path.
 */
export function sessionWorkspaceAccess(root: string): SessionWorkspaceAccess {
  return {
    async readSeed(tenantId, sessionId, maxBytes) {
      const ws = await sessionWorkspace(root, tenantId, sessionId);
      const out: SeedFile[] = [];
      let total = 0;
      const walk = async (dir: string, depth: number): Promise<void> => {
        if (depth > 16) return;
        const entries = await fs.promises.readdir(dir, { withFileTypes: true });
        for (const e of entries) {
          if (out.length >= MAX_SEED_FILES) return;
          const full = path.join(dir, e.name);
          if (e.isDirectory()) await walk(full, depth + 1);
          else if (e.isFile()) {
            const st = await fs.promises.lstat(full);
            if (total + st.size > maxBytes) continue;
            const h = await fs.promises.open(full, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
            try {
              const buf = await h.readFile();
              total += buf.length;
              out.push({
                path: path.relative(ws, full).split(path.sep).join('/'),
                contentBase64: buf.toString('base64'),
              });
            } finally {
              await h.close();
            }
          }
        }
      };
      await walk(ws, 0);
      return out;
    },
    async writeBack(tenantId, sessionId, files: readonly ChangedFile[]) {
      const ws = await sessionWorkspace(root, tenantId, sessionId);
      for (const f of files) {
        if (f.contentBase64 === undefined) continue;
        const n = normalizeWorkspacePath(f.path);
        if (!n.ok) continue;
        const target = await resolveForWrite(ws, n.path);
        const h = await fs.promises.open(
          target,
          fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW,
          0o600,
        );
        try {
          await h.writeFile(Buffer.from(f.contentBase64, 'base64'));
        } finally {
          await h.close();
        }
      }
    },
  };
}
