import createSubscriber, { type Subscriber } from 'pg-listen';
import type { Logger } from '../../../ports/logger';
import type { WakeupSource } from '../../../ports/wakeup';

/**
 * LISTEN run_ready through pg-listen, reconnecting forever (its default gives up after 3 s). NOTIFYs
 * sent while disconnected are lost, so every (re)connect also wakes the worker to poll.
 */
export class PgListenWakeup implements WakeupSource {
  private sub: Subscriber | null = null;
  constructor(
    private readonly url: string,
    private readonly log: Logger,
    private readonly channel = 'run_ready',
  ) {}

  async start(onWake: (runId?: string) => void): Promise<void> {
    const sub = createSubscriber(
      { connectionString: this.url },
      {
        retryInterval: 500,
        retryLimit: Infinity,
        retryTimeout: Infinity,
        paranoidChecking: 10_000,
        parse: (s: string) => s,
      },
    );
    sub.events.on('error', (e: Error) => this.log.error('LISTEN connection failed permanently', { error: e.message }));
    sub.events.on('reconnect', (attempt: number) => this.log.warn('LISTEN reconnecting', { attempt }));
    sub.events.on('connected', () => onWake());
    sub.notifications.on(this.channel, (payload: unknown) =>
      onWake(typeof payload === 'string' && payload !== '' ? payload : undefined),
    );
    await sub.connect();
    await sub.listenTo(this.channel);
    this.sub = sub;
  }

  async stop(): Promise<void> {
    const sub = this.sub;
    this.sub = null;
    if (sub) await sub.close().catch(() => undefined);
  }
}
