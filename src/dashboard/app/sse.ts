/**
 * A server-sent-events client over fetch (EventSource cannot send an Authorization header).
 * Reconnects with Last-Event-ID after a cut, and drops any persisted event whose sequence it has
 * already delivered, so a consumer sees every event exactly once and in order.
 */
import { authHeaders, describeError, type WireEvent } from './api';

export type ConnState = 'connecting' | 'live' | 'reconnecting' | 'ended' | 'failed';

export interface StreamHandlers {
  onEvent(e: WireEvent): void;
  onDelta?(d: { type: string; run_id: string; text: string }): void;
  onState?(s: ConnState, detail?: string): void;
}

export interface StreamHandle {
  close(): void;
  readonly lastSequence: number;
}

export function openStream(url: string, h: StreamHandlers, opts: { after?: number } = {}): StreamHandle {
  let last = opts.after ?? 0;
  let closed = false;
  let retryMs = 1000;
  let failures = 0;
  let ac: AbortController | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;

  const setState = (s: ConnState, detail?: string) => {
    if (!closed) h.onState?.(s, detail);
  };

  const dispatch = (block: string) => {
    const { id, event, data, retry } = parseBlock(block);
    if (retry !== undefined) retryMs = retry;
    if (!data.length) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data.join('\n'));
    } catch {
      return;
    }
    if (id === undefined) {
      h.onDelta?.({ ...(parsed as { type: string; run_id: string; text: string }), type: event });
      return;
    }
    const seq = Number(id);
    if (!(seq > last)) return; // already delivered: a replay overlap after a reconnect
    last = seq;
    h.onEvent(parsed as WireEvent);
  };

  const connect = async () => {
    if (closed) return;
    ac = new AbortController();
    let ended = false;
    try {
      const sep = url.includes('?') ? '&' : '?';
      // The header and the query say the same; the query survives proxies that drop the header.
      const r = await fetch(last > 0 ? `${url}${sep}last_event_id=${last}` : url, {
        headers: { accept: 'text/event-stream', ...authHeaders() },
        signal: ac.signal,
        cache: 'no-store',
      });
      if (!r.ok) {
        const err = describeError((await jsonOrNull(r)) as never, r.status);
        if (r.status >= 400 && r.status < 500 && r.status !== 429) {
          setState('failed', err.message);
          closed = true;
          return;
        }
        throw err;
      }
      failures = 0;
      setState('live');
      await forEachBlock(r.body!, dispatch);
      ended = true;
    } catch (e) {
      if (closed) return;
      setState('reconnecting', e instanceof Error ? e.message : String(e));
    }
    if (closed) return;
    if (ended && endedByServer()) {
      setState('ended');
      return;
    }
    setState('reconnecting');
    failures++;
    timer = setTimeout(() => void connect(), Math.min(retryMs * Math.max(1, failures), 5000));
  };

  // A run stream ends after its terminal event; a session stream ending is a cut to reconnect from.
  let terminalSeen = false;
  const outer = h;
  h = {
    ...outer,
    onEvent: (e) => {
      if (/^run\.(completed|failed|cancelled)$/.test(e.type)) terminalSeen = true;
      outer.onEvent(e);
    },
  };
  const endedByServer = () => /\/v1\/runs\//.test(url) && terminalSeen;

  setState('connecting');
  void connect();
  return {
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      ac?.abort();
    },
    get lastSequence() {
      return last;
    },
  };
}

/** One event block's fields; the last `id`/`event`/`retry` line wins, `data` lines accumulate. */
function parseBlock(block: string): { id?: string; event: string; data: string[]; retry?: number } {
  let id: string | undefined;
  let event = 'message';
  let retry: number | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const at = line.indexOf(':');
    const k = at < 0 ? line : line.slice(0, at);
    const v = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
    if (k === 'id') id = v;
    else if (k === 'event') event = v;
    else if (k === 'data') data.push(v);
    else if (k === 'retry' && /^\d+$/.test(v)) retry = Number(v);
  }
  return { id, event, data, retry };
}

async function jsonOrNull(r: Response): Promise<unknown> {
  try {
    return (await r.json()) as unknown;
  } catch {
    return null;
  }
}

/** Hands each blank-line-separated block of the stream to `onBlock`, in order, until the stream ends. */
async function forEachBlock(body: ReadableStream<Uint8Array>, onBlock: (block: string) => void): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      onBlock(block);
    }
  }
}
