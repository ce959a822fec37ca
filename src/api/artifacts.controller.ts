import { ApiErrors, ApiSuccess } from './openapi';
import { Controller, Get, Inject, Param, Req, Res } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { pipeline, Readable } from 'node:stream';
import { GetRunQuery } from '../application/runs/queries';
import { ArtifactIntegrityError } from '../domain/artifacts';
import { NotFoundError } from '../domain/errors';
import type { Principal } from '../domain/principal';
import type { ArtifactMetadata, ArtifactStore } from '../ports/artifact-store';
import type { Logger } from '../ports/logger';
import { Auth, RequireScope } from './auth/decorators';
import { API_LOGGER } from './events.controller';
import type { ApiRequest } from './request-context';
import { uuidParam } from './validation';

export const ARTIFACT_STORE = Symbol('ArtifactStore');

/**
 * Content up to this size is read and verified completely before the response starts, so a tampered
 * file gets a proper `artifact_integrity_error` envelope. Larger content is verified while it streams:
 * headers are already sent, so on a mismatch the connection is aborted before the last bytes and the
 * client sees a truncated body (short of Content-Length) — never silently wrong bytes. See ADR 0019.
 */
export const PREVERIFY_MAX_BYTES = 8 * 1024 * 1024;

/** The part of express's response the download uses. */
interface DownloadResponse extends NodeJS.WritableStream {
  headersSent: boolean;
  statusCode: number;
  setHeader(name: string, value: string | number): unknown;
  status(code: number): DownloadResponse;
  end(): this;
  destroy(error?: Error): unknown;
}

export const presentArtifact = (a: ArtifactMetadata) => ({
  id: a.id,
  name: a.name,
  media_type: a.mediaType,
  size_bytes: a.sizeBytes,
  sha256: a.sha256,
  source: a.source,
  run_id: a.runId ?? null,
  session_id: a.sessionId ?? null,
  created_at: a.createdAt,
  expires_at: a.expiresAt ?? null,
  content_url: `/v1/artifacts/${a.id}/content`,
});

/**
 * Artifact metadata and content (plan §16, §18.4). Authorization comes first: an artifact of another
 * tenant — or one produced for another principal — reads as 404, exactly like an unknown id, and no
 * response ever names where the bytes are stored.
 */
@ApiTags('artifacts')
@Controller('v1')
export class ArtifactsController {
  constructor(
    private readonly queries: QueryBus,
    @Inject(ARTIFACT_STORE) private readonly store: ArtifactStore,
    @Inject(API_LOGGER) private readonly log: Logger,
  ) {}

  @Get('artifacts/:id')
  @RequireScope('runs.read')
  @ApiOperation({ summary: 'Artifact metadata: name, media type, size, SHA-256, source, run' })
  @ApiSuccess(200, 'The artifact metadata')
  @ApiErrors(400, 404)
  async get(@Auth() principal: Principal, @Param('id', uuidParam('artifact_id')) id: string) {
    return presentArtifact(await this.visible(principal, id));
  }

  @Get('artifacts/:id/content')
  @RequireScope('runs.read')
  @ApiProduces('application/octet-stream')
  @ApiOperation({
    summary: 'Artifact content, streamed and verified against its SHA-256 (Digest, ETag, Content-Length)',
  })
  @ApiSuccess(200, 'The bytes, verified against the SHA-256', { contentType: 'application/octet-stream' })
  @ApiSuccess(304, 'Not modified (If-None-Match matched the ETag)')
  @ApiErrors(400, 404)
  async content(
    @Auth() principal: Principal,
    @Param('id', uuidParam('artifact_id')) id: string,
    @Req() req: ApiRequest,
    @Res() res: DownloadResponse,
  ): Promise<void> {
    const meta = await this.visible(principal, id);
    const etag = `"sha256-${meta.sha256}"`;
    if (meta.sizeBytes <= PREVERIFY_MAX_BYTES) await this.verifyWhole(principal, id);
    res.setHeader('Content-Type', meta.mediaType);
    res.setHeader('Content-Length', meta.sizeBytes);
    res.setHeader('ETag', etag);
    // RFC 3230 Digest and its RFC 9530 successor, both base64 of the SHA-256.
    const b64 = Buffer.from(meta.sha256, 'hex').toString('base64');
    res.setHeader('Digest', `sha-256=${b64}`);
    res.setHeader('Repr-Digest', `sha-256=:${b64}:`);
    res.setHeader('Content-Disposition', contentDisposition(meta.name));
    // Served from the dashboard's origin: never rendered or sniffed as a page.
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Security-Policy', "sandbox; default-src 'none'");
    res.setHeader('Cache-Control', 'private, no-cache');
    const inm = req.headers['if-none-match'];
    if (typeof inm === 'string' && inm.split(',').some((t) => t.trim() === etag)) {
      res.status(304).end();
      return;
    }
    const content = await this.store.open(principal.tenantId, id);
    if (!content) throw new NotFoundError(`artifact ${id} not found`, { artifactId: id });
    const source = content.stream instanceof Readable ? content.stream : Readable.from(content.stream);
    res.status(200);
    // pipeline: a client that goes away destroys the file stream too (no leaked descriptor), and an
    // integrity failure destroys the response — headers are out, so the client sees a short body
    // rather than unverified bytes as complete.
    pipeline(source, res, (e) => {
      if (!e || e.code === 'ERR_STREAM_PREMATURE_CLOSE') return;
      this.log.error('artifact download aborted', {
        artifactId: id,
        requestId: req.requestId,
        error: e instanceof ArtifactIntegrityError ? e.message : `${e.name}: ${e.message}`,
      });
    });
  }

  @Get('runs/:id/artifacts')
  @RequireScope('runs.read')
  @ApiOperation({ summary: "A run's artifacts, oldest first" })
  @ApiSuccess(200, "{items}: the run's artifacts")
  @ApiErrors(400, 404)
  async forRun(@Auth() principal: Principal, @Param('id', uuidParam('run_id')) id: string) {
    await this.queries.execute(new GetRunQuery(principal, id)); // 404 for another tenant's or principal's run
    const items = await this.store.listForRun(principal.tenantId, id);
    return { items: items.filter((a) => ownedBy(a, principal)).map(presentArtifact) };
  }

  private async visible(principal: Principal, id: string): Promise<ArtifactMetadata> {
    const meta = await this.store.get(principal.tenantId, id);
    if (!meta || !ownedBy(meta, principal)) throw new NotFoundError(`artifact ${id} not found`, { artifactId: id });
    return meta;
  }

  /** Reads the whole content through the verifying stream; throws ArtifactIntegrityError on a mismatch. */
  private async verifyWhole(principal: Principal, id: string): Promise<void> {
    const content = await this.store.open(principal.tenantId, id);
    if (!content) throw new NotFoundError(`artifact ${id} not found`, { artifactId: id });
    for await (const chunk of content.stream) void chunk;
  }
}

/** Same tenant (the store's filter) and, when the artifact names one, the same principal. */
function ownedBy(a: ArtifactMetadata, principal: Principal): boolean {
  return a.principalId === undefined || a.principalId === principal.principalId;
}

/** `attachment` with an ASCII fallback and the RFC 5987 UTF-8 name. */
function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}
