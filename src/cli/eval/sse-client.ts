import * as fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { createParser } from 'eventsource-parser';
import { addTokenToFile, createHttpApp } from '../../composition/http';
import type { Platform } from '../../composition/platform';
import type { Principal } from '../../domain/principal';
import type { SseFrameSeen } from './observation';

/**
 * The harness's own HTTP API on an ephemeral loopback port, over the harness's platform: the same
 * Nest application `agent api` serves, in token mode with a one-off token of the eval principal
 * (its runs are the principal's own, which AUTH_MODE=dev's local user could not read).
 */
export class EvalHttpApi {
  private constructor(
    private readonly app: INestApplication,
    readonly base: string,
    readonly token: string,
    private readonly dir: string,
  ) {}

  static async start(platform: Platform, principal: Principal): Promise<EvalHttpApi> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-eval-api-'));
    try {
      const file = path.join(dir, 'tokens.json');
      const who = { tenantId: principal.tenantId, principalId: principal.principalId, scopes: ['runs.read'] };
      const token = addTokenToFile(file, who, []);
      const app = await createHttpApp(platform, { auth: { mode: 'token', tokensFile: file } });
      await app.listen(0, '127.0.0.1');
      const server = app.getHttpServer() as { address(): AddressInfo };
      const port = server.address().port;
      return new EvalHttpApi(app, `http://127.0.0.1:${port}`, token, dir);
    } catch (e) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw e;
    }
  }

  async close(): Promise<void> {
    await this.app.close();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * One connection to `GET /v1/runs/{id}/events`, read as a client reads it (fetch and an SSE parser):
 * every persisted frame (one with an `id:`) goes to `onFrame` in arrival order; transient deltas
 * (no id) are not recorded. `done` settles when the server ends the stream or `disconnect()` cuts it.
 */
export class SseConnection {
  readonly frames: SseFrameSeen[] = [];
  readonly done: Promise<void>;
  private readonly abort = new AbortController();
  private cut = false;

  constructor(
    api: EvalHttpApi,
    runId: string,
    lastEventId: number | null,
    private readonly onFrame: (f: SseFrameSeen, c: SseConnection) => void = () => undefined,
  ) {
    const headers: Record<string, string> = { authorization: `Bearer ${api.token}`, accept: 'text/event-stream' };
    if (lastEventId !== null) headers['last-event-id'] = String(lastEventId);
    this.done = this.read(`${api.base}/v1/runs/${runId}/events`, headers);
    // Awaited later (SseReplayProbe.finish); a failure meanwhile is not an unhandled rejection.
    this.done.catch(() => undefined);
  }

  /** Drops the connection at once, like a client whose network went away. */
  disconnect(): void {
    this.cut = true;
    this.abort.abort();
  }

  get disconnected(): boolean {
    return this.cut;
  }

  private async read(url: string, headers: Record<string, string>): Promise<void> {
    const parser = createParser({
      onEvent: (m) => {
        if (this.cut || m.id === undefined) return;
        const f = { id: Number(m.id), type: m.event ?? 'message' };
        this.frames.push(f);
        this.onFrame(f, this);
      },
    });
    try {
      const r = await fetch(url, { headers, signal: this.abort.signal });
      if (r.status !== 200 || !r.body) throw new Error(`GET ${url} answered ${r.status}: ${await r.text()}`);
      const decoder = new TextDecoder();
      for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>)
        parser.feed(decoder.decode(chunk, { stream: true }));
    } catch (e) {
      if (!this.cut) throw e;
    }
  }
}
