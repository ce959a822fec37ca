/* eslint-disable @typescript-eslint/no-explicit-any -- the harness parses arbitrary JSON and SSE payloads */
import type { INestApplication } from '@nestjs/common';
import type { AddressInfo } from 'node:net';
import { createHttpApp } from '../../../src/composition/http';
import type { PlatformOptions, WorkerOptions } from '../../../src/composition/platform';
import type { Settings } from '../../../src/config/settings';
import type { Worker } from '../../../src/runtime/worker';
import { createTestPlatform, type TestPlatform } from '../../support/platform';

/** A real Nest HTTP app on a real port over a real database; optionally an in-process worker. */
export interface ApiHarness {
  readonly base: string;
  readonly t: TestPlatform;
  readonly app: INestApplication;
  readonly worker: Worker | null;
  eventCount(): Promise<number>;
  runCount(): Promise<number>;
  close(): Promise<void>;
}

export async function startApi(
  url: string,
  settings: Partial<Settings> = {},
  opts: { worker?: boolean; workerOptions?: WorkerOptions; platform?: Partial<PlatformOptions> } = {},
): Promise<ApiHarness> {
  const t = await createTestPlatform(
    url,
    {
      pollIntervalMs: 200,
      leaseSeconds: 5,
      apiRateLimitPerMinute: 0,
      ...settings,
    },
    opts.platform,
  );
  const app = await createHttpApp(t.platform);
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as AddressInfo).port;
  let worker: Worker | null = null;
  if (opts.worker) {
    worker = t.platform.createWorker({ concurrency: 4, pollIntervalMs: 200, drainMs: 2000, ...opts.workerOptions });
    await worker.start();
  }
  const count = async (table: string) =>
    Number((await t.platform.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`)).rows[0].n);
  return {
    base: `http://127.0.0.1:${port}`,
    t,
    app,
    worker,
    eventCount: () => count('events'),
    runCount: () => count('runs'),
    async close() {
      await worker?.stop();
      await app.close();
      await t.close();
    },
  };
}

/** A parsed response body: the fields the tests read are typed, anything else is loose. */
export interface WireBody {
  id: string;
  run_id: string;
  status: string;
  next_cursor: string | null;
  items: any[];
  error: { code: string; message: string; details: Record<string, any>; request_id: string };
  [key: string]: any;
}

/** JSON over fetch: status, headers and the parsed body (or null). */
export async function call(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: WireBody }> {
  const headers: Record<string, string> = {
    ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
    ...opts.headers,
  };
  const r = await fetch(`${base}${path}`, {
    method,
    headers,
    body: opts.raw ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined),
  });
  const text = await r.text();
  let body: WireBody = null as unknown as WireBody;
  try {
    body = text === '' ? body : (JSON.parse(text) as WireBody);
  } catch {
    body = { raw: text } as unknown as WireBody;
  }
  return { status: r.status, headers: r.headers, body };
}

/** Reads an SSE response until `until` says stop (or the server ends it); returns the raw frames. */
export async function readSse(
  url: string,
  opts: { headers?: Record<string, string>; until?: (frames: SseFrame[]) => boolean; timeoutMs?: number } = {},
): Promise<SseFrame[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), opts.timeoutMs ?? 20_000);
  const frames: SseFrame[] = [];
  try {
    const r = await fetch(url, { headers: { accept: 'text/event-stream', ...opts.headers }, signal: ac.signal });
    if (r.status !== 200) throw new Error(`SSE status ${r.status}: ${await r.text()}`);
    const reader = r.body!.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        frames.push(parseFrame(buf.slice(0, i)));
        buf = buf.slice(i + 2);
      }
      if (opts.until?.(frames)) {
        ac.abort();
        break;
      }
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e;
  } finally {
    clearTimeout(timer);
  }
  return frames;
}

export interface SseFrame {
  id?: string;
  event?: string;
  data?: any;
  comment?: string;
  retry?: string;
}

export function parseFrame(block: string): SseFrame {
  const f: SseFrame = {};
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) f.comment = line.slice(1).trim();
    else {
      const at = line.indexOf(':');
      const k = at < 0 ? line : line.slice(0, at);
      const v = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
      if (k === 'id') f.id = v;
      else if (k === 'event') f.event = v;
      else if (k === 'data') f.data = JSON.parse(v);
      else if (k === 'retry') f.retry = v;
    }
  }
  return f;
}
