import * as fs from 'node:fs';
import * as path from 'node:path';
import { ARTIFACT_SOURCES, mediaTypeForName } from '../../domain/artifacts';
import type { ToolResult, ToolSpec } from '../../domain/tools/tool-spec';
import type { ArtifactStore } from '../../ports/artifact-store';
import type { ExtendedTool } from '../tool-extensions';
import {
  normalizePathArgument,
  PATH_OUTSIDE_WORKSPACE,
  PathOutsideWorkspace,
  resolveExisting,
  sessionWorkspace,
} from '../workspace/paths';

/** The largest workspace file `artifact.export` copies (a sandbox's disk limit is smaller). */
export const MAX_EXPORT_BYTES = 512 * 1024 * 1024;

const SPEC: ToolSpec = {
  name: 'artifact.export',
  version: '1.0.0',
  description:
    'Exports a file from the session workspace as an artifact that the user can download and verify; returns its artifact id, name, size and SHA-256.',
  inputSchema: {
    type: 'object',
    properties: {
      path: {
        type: 'string',
        minLength: 1,
        maxLength: 512,
        description: 'Path relative to the session workspace, e.g. "report.md".',
      },
      media_type: {
        type: 'string',
        minLength: 3,
        maxLength: 255,
        description: 'Optional media type; guessed from the file extension when omitted.',
      },
    },
    required: ['path'],
    additionalProperties: false,
  },
  outputSchema: {
    type: 'object',
    properties: {
      artifact_id: { type: 'string' },
      name: { type: 'string' },
      media_type: { type: 'string' },
      size_bytes: { type: 'integer' },
      sha256: { type: 'string' },
    },
    required: ['artifact_id', 'name', 'media_type', 'size_bytes', 'sha256'],
    additionalProperties: false,
  },
  // It reads the isolated workspace and writes only the platform's own artifact store.
  sideEffect: 'workspace_write',
  risk: 'low',
  // Exporting the same bytes again yields another id over the same stored content: safe to retry.
  idempotency: 'idempotent',
  requiredScopes: ['tools.use'],
  timeoutSeconds: 60,
  maximumOutputBytes: 2048,
  allowParallel: false,
};

export interface ExportToolOptions {
  /** `$AGENT_DATA_DIR/workspaces` (the same root as the workspace tools). */
  readonly workspaceRoot: string;
  readonly store: ArtifactStore;
}

const refuse = (errorCode: string, message: string): ToolResult => ({
  ok: false,
  errorCode,
  message,
  retryable: false,
});

/**
 * `artifact.export` (plan §8.2, §18.4): copies one regular file of the session workspace into the
 * artifact store, streaming it (never loaded whole) and hashing on the way in. The path is checked as
 * a string (absolute and `..` refused, step 5), then on real paths (an ancestor symlink that leaves
 * the workspace is refused); a symlink as the file itself is refused outright, and the file is opened
 * with O_NOFOLLOW so a link swapped in after the check is not followed either.
 */
export function createArtifactExportTool(opts: ExportToolOptions): ExtendedTool {
  return {
    spec: SPEC,
    trust: 'internal_tool',
    normalize: (args) => normalizePathArgument(args),
    async execute(args, ctx) {
      const rel = String(args.path);
      let handle: fs.promises.FileHandle | undefined;
      try {
        const ws = await sessionWorkspace(opts.workspaceRoot, ctx.tenantId, ctx.sessionId);
        const candidate = path.join(ws, rel);
        const link = await fs.promises.lstat(candidate).catch(() => null);
        if (link?.isSymbolicLink())
          return refuse(PATH_OUTSIDE_WORKSPACE, `${rel} is a symlink; only regular files can be exported`);
        const real = await resolveExisting(ws, rel);
        if (real === null) return refuse('file_not_found', `no file ${rel} in the workspace`);
        handle = await fs.promises.open(real, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
        const st = await handle.stat();
        if (!st.isFile()) return refuse('not_a_file', `${rel} is not a regular file`);
        if (st.size > MAX_EXPORT_BYTES)
          return refuse('file_too_large', `${rel} is ${st.size} bytes; at most ${MAX_EXPORT_BYTES} can be exported`);
        const name = path.basename(rel);
        const mediaType = typeof args.media_type === 'string' ? args.media_type : mediaTypeForName(name);
        const meta = await opts.store.put(
          {
            tenantId: ctx.tenantId,
            principalId: ctx.principalId,
            runId: ctx.runId,
            sessionId: ctx.sessionId,
            name,
            mediaType,
            source: ARTIFACT_SOURCES.export,
          },
          handle.createReadStream({ autoClose: false }),
        );
        return {
          ok: true,
          output: {
            artifact_id: meta.id,
            name: meta.name,
            media_type: meta.mediaType,
            size_bytes: meta.sizeBytes,
            sha256: meta.sha256,
          },
        };
      } catch (e) {
        if (e instanceof PathOutsideWorkspace) return refuse(PATH_OUTSIDE_WORKSPACE, e.message);
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ELOOP') return refuse(PATH_OUTSIDE_WORKSPACE, `${rel} is a symlink (not followed)`);
        if (code === 'ENOENT') return refuse('file_not_found', `no file ${rel} in the workspace`);
        if (code === 'EISDIR') return refuse('not_a_file', `${rel} is a directory`);
        if (e instanceof Error && (e as { code?: unknown }).code === 'validation_error')
          return refuse('invalid_media_type', e.message);
        return {
          ok: false,
          errorCode: 'artifact_export_failed',
          message: e instanceof Error ? e.message : String(e),
          retryable: false,
        };
      } finally {
        await handle?.close().catch(() => undefined);
      }
    },
  };
}
