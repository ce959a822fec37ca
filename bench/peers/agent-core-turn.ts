import { loadSettings } from '../../src/config/settings';
import { createPlatform, type Platform } from '../../src/composition/platform';
import { CreateSessionCommand, CreateSessionHandler } from '../../src/application/sessions/create-session';
import { SubmitMessageCommand, SubmitMessageHandler } from '../../src/application/runs/submit-message';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import type { Worker } from '../../src/runtime/worker';
import type { StoredEvent } from '../../src/domain/events/payloads';
import { lanes } from './lanes';

/**
 * agent-core's calculator turn end to end, in-process: the session created and the message
 * submitted through the command handlers, claimed through NOTIFY by an idle worker, run to its end.
 */
export class AgentCoreTurn {
  private constructor(
    private readonly platform: Platform,
    private readonly worker: Worker,
    private readonly sessions: CreateSessionHandler,
    private readonly messages: SubmitMessageHandler,
    private readonly ended: RunEnds,
  ) {}

  static async open(url: string, concurrency: number): Promise<AgentCoreTurn> {
    const platform = await createPlatform(
      { ...loadSettings(), fakeModelLatencyMs: 0, pollIntervalMs: 60_000 },
      { service: 'bench', databaseUrl: url, quiet: true, migrate: false, poolSize: 20 },
    );
    const settings = { defaultAgentId: 'general', maxMessageChars: 32_000 };
    const p = platform;
    const ended = new RunEnds();
    const worker = p.createWorker({
      concurrency,
      pollIntervalMs: 60_000,
      drainMs: 1000,
      onCommitted: (events) => ended.observe(events),
    });
    await worker.start();
    return new AgentCoreTurn(
      p,
      worker,
      new CreateSessionHandler(p.store, p.agents, p.ids, settings),
      new SubmitMessageHandler(p.store, p.sessions, p.agents, p.ids, settings, p.runs, p.toolRecords),
      ended,
    );
  }

  /**
   * `n` turns, `concurrency` at a time: each lane creates a session with its message (one command, as
   * the API's `POST /v1/sessions` with `message`), and waits for that run to end (its terminal commit,
   * seen by the worker's commit observer) before its next turn.
   */
  async turns(text: string, n: number, concurrency: number): Promise<void> {
    await lanes(n, concurrency, async () => {
      // The session and its first message in one append, as `POST /v1/sessions` with `message` writes
      // them (ADR 0053): one insert of the session row, already titled, and one commit fewer.
      const s = await this.sessions.execute(
        new CreateSessionCommand(LOCAL_PRINCIPAL, null, null, {}, { text, overrides: POLICY }),
      );
      await this.ended.wait(s.runId!);
    });
  }

  /** One session with `runs` turns, one after another (each waits for the last one's end); its run ids. */
  async conversation(text: string, runs: number): Promise<{ sessionId: string; runIds: string[] }> {
    const s = await this.sessions.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    const runIds: string[] = [];
    for (let i = 0; i < runs; i++) {
      const r = await this.messages.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, s.id, text, null, POLICY));
      await this.ended.wait(r.runId);
      runIds.push(r.runId);
    }
    return { sessionId: s.id, runIds };
  }

  /** The platform's event store (for the read benches). */
  get store(): Platform['store'] {
    return this.platform.store;
  }

  async close(): Promise<void> {
    await this.worker.stop();
    await this.platform.close();
  }
}

/** Resolves a waiter when its run's terminal event commits (the worker's commit observer feeds it). */
class RunEnds {
  private readonly done = new Set<string>();
  private readonly waiting = new Map<string, () => void>();

  observe(events: readonly StoredEvent[]): void {
    for (const e of events) {
      if (!TERMINAL.has(e.type) || e.runId === null) continue;
      const wake = this.waiting.get(e.runId);
      if (wake) {
        this.waiting.delete(e.runId);
        wake();
      } else this.done.add(e.runId);
    }
  }

  /** Resolves when `runId` has ended (it may have ended before the submit returned its id). */
  wait(runId: string): Promise<void> {
    if (this.done.delete(runId)) return Promise.resolve();
    return new Promise((resolve) => this.waiting.set(runId, resolve));
  }
}

/** The fake model's calculator turn: two model calls around one tool call. */
const POLICY = { modelPolicy: 'fake:calculator_then_answer' };

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);
