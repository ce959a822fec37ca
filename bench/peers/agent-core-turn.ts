import { loadSettings } from '../../src/config/settings';
import { createPlatform, type Platform } from '../../src/composition/platform';
import { CreateSessionCommand, CreateSessionHandler } from '../../src/application/sessions/create-session';
import { SubmitMessageCommand, SubmitMessageHandler } from '../../src/application/runs/submit-message';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import type { Worker } from '../../src/runtime/worker';

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
  ) {}

  static async open(url: string, concurrency: number): Promise<AgentCoreTurn> {
    const platform = await createPlatform(
      { ...loadSettings(), fakeModelLatencyMs: 0, pollIntervalMs: 60_000 },
      { service: 'bench', databaseUrl: url, quiet: true, migrate: false, poolSize: 20 },
    );
    const settings = { defaultAgentId: 'general', maxMessageChars: 32_000 };
    const p = platform;
    const worker = p.createWorker({ concurrency, pollIntervalMs: 60_000, drainMs: 1000 });
    await worker.start();
    return new AgentCoreTurn(
      p,
      worker,
      new CreateSessionHandler(p.store, p.agents, p.ids, settings),
      new SubmitMessageHandler(p.store, p.sessions, p.agents, p.ids, settings, p.runs, p.toolRecords),
    );
  }

  /** One turn; resolves when the worker has finished it. */
  async turn(text: string): Promise<void> {
    const s = await this.sessions.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    const target = this.worker.stats.finished + 1;
    await this.messages.execute(
      new SubmitMessageCommand(LOCAL_PRINCIPAL, s.id, text, null, { modelPolicy: 'fake:calculator_then_answer' }),
    );
    while (this.worker.stats.finished < target) await new Promise((r) => setImmediate(r));
  }

  /** `n` turns, `concurrency` at a time; resolves when the worker has finished them all. */
  async turns(text: string, n: number, concurrency: number): Promise<void> {
    const target = this.worker.stats.finished + n;
    let next = 0;
    const lane = async () => {
      while (next < n) {
        next += 1;
        const s = await this.sessions.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
        await this.messages.execute(
          new SubmitMessageCommand(LOCAL_PRINCIPAL, s.id, text, null, { modelPolicy: 'fake:calculator_then_answer' }),
        );
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
    while (this.worker.stats.finished < target) await new Promise((r) => setTimeout(r, 1));
  }

  async close(): Promise<void> {
    await this.worker.stop();
    await this.platform.close();
  }
}
