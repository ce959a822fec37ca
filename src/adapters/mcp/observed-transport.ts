import type { JSONRPCMessage, MessageExtraInfo, Transport, TransportSendOptions } from '@modelcontextprotocol/client';

/**
 * Wraps an SDK transport to (1) pin the protocol version offered in `initialize` for a server that
 * mishandles newer versions (config `protocol_version`), and (2) report messages the server sent that are not valid JSON-RPC (a parse error in the
 * transport) so the supervisor can fail the calls waiting on them instead of letting them hang.
 */
export class ObservedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;

  constructor(
    private readonly inner: Transport & {
      readonly pid?: number | null;
      readonly exit?: { readonly code: number | null; readonly signal: string | null } | null;
    },
    private readonly pinnedVersion: string | null,
    private readonly onInvalidMessage: (error: Error) => void,
  ) {
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error: Error) => {
      if (error instanceof SyntaxError || error?.name === 'ZodError') this.onInvalidMessage(error);
      this.onerror?.(error);
    };
    inner.onmessage = (message: JSONRPCMessage, extra?: MessageExtraInfo) => this.onmessage?.(message, extra);
  }

  get pid(): number | null {
    return this.inner.pid ?? null;
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  async start(): Promise<void> {
    await this.inner.start();
  }

  /** How a stdio child ended (ChildStdioTransport sets it before `onclose`); null while it runs or for HTTP. */
  get exit(): { readonly code: number | null; readonly signal: string | null } | null {
    return this.inner.exit ?? null;
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const m = message as { method?: string; id?: string | number; params?: Record<string, unknown> };
    if (m.method === 'initialize' && m.id !== undefined && this.pinnedVersion)
      message = { ...message, params: { ...m.params, protocolVersion: this.pinnedVersion } };
    return this.inner.send(message, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  setSupportedProtocolVersions(versions: string[]): void {
    this.inner.setSupportedProtocolVersions?.(versions);
  }
}
