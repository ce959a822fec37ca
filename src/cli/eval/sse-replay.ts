import type { Platform } from '../../composition/platform';
import type { StoredEvent } from '../../domain/events/payloads';
import type { Principal } from '../../domain/principal';
import type { Intervention } from './case-types';
import { describeIntervention } from './interventions';
import type { SseObservation } from './observation';
import { EvalHttpApi, SseConnection } from './sse-client';

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/** How long the reconnected stream may take to end once the run is terminal (it ends after the replay). */
const STREAM_END_MS = 15_000;

/**
 * The `disconnect_sse` intervention (case 22): a client streams the run over the harness's own HTTP
 * API from before the run starts; when it receives the intervention's event it drops the connection
 * (its last frame's id is its Last-Event-ID), and it reconnects with that id once the run has
 * committed more events while it was away, so the server must replay those from the database and
 * then go on live. What it received on both connections is the case's `sse` observation.
 */
export class SseReplayProbe {
  private first: SseConnection | null = null;
  private second: SseConnection | null = null;
  private seen = 0;
  private lastEventId: number | null = null;
  private readonly logged: number[] = [];
  private logTerminal = false;
  private endedBeforeCut = false;
  private awayCount = 0;
  private readonly failures: string[] = [];

  private constructor(
    private readonly api: EvalHttpApi,
    private readonly runId: string,
    private readonly at: Intervention,
  ) {}

  /** Starts the API and connects; null when the case has no `disconnect_sse`. */
  static async start(
    platform: Platform,
    principal: Principal,
    runId: string,
    interventions: readonly Intervention[],
  ): Promise<SseReplayProbe | null> {
    const at = interventions.find((i) => i.action === 'disconnect_sse');
    if (!at) return null;
    const probe = new SseReplayProbe(await EvalHttpApi.start(platform, principal), runId, at);
    probe.first = new SseConnection(probe.api, runId, null, (f, c) => {
      if (f.type !== at.atEvent || ++probe.seen !== at.occurrence) return;
      c.disconnect();
      probe.lastEventId = f.id;
      probe.endedBeforeCut = probe.logTerminal;
      probe.reconnectIfDue();
    });
    return probe;
  }

  /** Every run event the harness observes in the log, in order (followRun). */
  observeLog(e: StoredEvent): void {
    this.logged.push(e.sequence);
    if (TERMINAL.has(e.type)) this.logTerminal = true;
    this.reconnectIfDue();
  }

  /** Once the run is terminal: waits for both streams, stops the API, and returns what was seen. */
  async finish(): Promise<{ failures: string[]; observation: SseObservation | null }> {
    try {
      if (this.lastEventId !== null && this.second === null) this.reconnect();
      await this.settle(this.first, 'the first connection');
      await this.settle(this.second, 'the reconnected stream');
    } finally {
      this.first?.disconnect();
      this.second?.disconnect();
      await this.api.close();
    }
    if (this.lastEventId === null) {
      this.failures.push(`intervention ${describeIntervention(this.at)} never fired: the SSE client never received it`);
      return { failures: this.failures, observation: null };
    }
    return {
      failures: this.failures,
      observation: {
        beforeDisconnect: this.first?.frames ?? [],
        lastEventId: this.lastEventId,
        runEndedBeforeDisconnect: this.endedBeforeCut,
        committedWhileAway: this.awayCount,
        afterReconnect: this.second?.frames ?? [],
      },
    };
  }

  /** Reconnects once the log holds an event the client has not had: what it missed is then in the database. */
  private reconnectIfDue(): void {
    if (this.lastEventId === null || this.second !== null || (this.logged.at(-1) ?? 0) <= this.lastEventId) return;
    this.reconnect();
  }

  private reconnect(): void {
    const after = this.lastEventId ?? 0;
    this.awayCount = this.logged.filter((s) => s > after).length;
    this.second = new SseConnection(this.api, this.runId, after);
  }

  private async settle(c: SseConnection | null, what: string): Promise<void> {
    if (!c) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STREAM_END_MS)));
    try {
      const r = await Promise.race([c.done.then(() => 'ended' as const), late]);
      if (r === 'late')
        this.failures.push(`sse: ${what} did not end within ${STREAM_END_MS / 1000} s of the run's end`);
    } catch (e) {
      this.failures.push(`sse: ${what} failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      clearTimeout(timer);
    }
  }
}
