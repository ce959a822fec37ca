import { ARTIFACT_SOURCES } from '../domain/artifacts';
import type { ToolSpec } from '../domain/tools/tool-spec';
import type { ArtifactStore } from '../ports/artifact-store';

/** Where oversized tool results go (plan §8.3 "truncate or artifactize", §18.4), and for how long. */
export interface ToolResultArtifacts {
  readonly store: ArtifactStore;
  /** Lifetime of a stored result; 0 keeps it until deleted. */
  readonly ttlSeconds: number;
}

export interface LargeResultContext {
  readonly tenantId: string;
  readonly principalId: string;
  readonly runId: string;
  readonly sessionId: string;
  readonly invocationId: string;
  readonly nowMs: number;
}

/**
 * A result over the tool's `maximumOutputBytes` is stored whole as a JSON artifact; the model gets a
 * marked excerpt and the artifact's reference (id, name, size, SHA-256), all within the limit. When
 * no store is configured or the store fails, the plain excerpt is returned and says nothing was kept.
 */
export async function fitToolResult(
  output: Record<string, unknown>,
  spec: ToolSpec,
  ctx: LargeResultContext,
  artifacts: ToolResultArtifacts | undefined,
): Promise<{ output: Record<string, unknown>; truncated: boolean }> {
  const text = JSON.stringify(output);
  const size = Buffer.byteLength(text);
  const max = spec.maximumOutputBytes;
  if (size <= max) return { output, truncated: false };
  let artifact: Record<string, unknown> | null = null;
  if (artifacts) {
    try {
      const meta = await artifacts.store.put(
        {
          tenantId: ctx.tenantId,
          principalId: ctx.principalId,
          runId: ctx.runId,
          sessionId: ctx.sessionId,
          name: `${spec.name}-${ctx.invocationId}.json`,
          mediaType: 'application/json',
          source: ARTIFACT_SOURCES.toolResult,
          ...(artifacts.ttlSeconds > 0
            ? { expiresAt: new Date(ctx.nowMs + artifacts.ttlSeconds * 1000).toISOString() }
            : {}),
        },
        text,
      );
      artifact = {
        artifact_id: meta.id,
        name: meta.name,
        media_type: meta.mediaType,
        size_bytes: meta.sizeBytes,
        sha256: meta.sha256,
      };
    } catch {
      artifact = null; // the excerpt below still bounds what the model sees
    }
  }
  const marker = artifact
    ? `[truncated: ${size} bytes exceed the ${max}-byte limit; the full result is artifact ${String(artifact.artifact_id)}]`
    : `[truncated: ${size} bytes exceed the ${max}-byte limit]`;
  const frame = { truncated: true, marker, excerpt: '', ...(artifact ? { artifact } : {}) };
  const budget = Math.max(0, max - Buffer.byteLength(JSON.stringify(frame)) - 16);
  let excerpt = text.slice(0, budget);
  // JSON escaping can grow the excerpt; shrink until the whole frame fits.
  while (excerpt.length > 0 && Buffer.byteLength(JSON.stringify({ ...frame, excerpt })) > max)
    excerpt = excerpt.slice(0, Math.max(0, excerpt.length - Math.max(16, Math.ceil(excerpt.length / 8))));
  return { output: { ...frame, excerpt }, truncated: true };
}
