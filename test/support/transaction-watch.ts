import type { Pool, PoolClient } from 'pg';
import type { ModelProvider } from '../../src/ports/model-provider';
import type { Tool } from '../../src/ports/tool';
import type { ModelRouter } from '../../src/runtime/model-router';
import type { ToolRegistry } from '../../src/tools/registry';

/**
 * Transaction hygiene (issue 25 item 5, ADR 0042): no database transaction may be open while a model
 * or tool port is called (plan: "never await a model, tool or human inside a transaction";
 * `Database.transaction`). The watch follows every client of a pool while it is checked out and,
 * when a port is entered, records a violation for each one whose transaction is open.
 *
 * Open means what the server last said (`getTransactionStatus()`, from its ReadyForQuery: `T` in a
 * transaction, `E` in a failed one) as changed by the statements sent and not yet answered (a
 * pipelined `BEGIN` whose answer is still on its way opens one; a `COMMIT` or `ROLLBACK` on its way
 * closes it).
 */
export interface PortCall {
  readonly port: 'model' | 'tool';
  readonly name: string;
}

export interface Violation extends PortCall {
  /** The transaction status of the connection when the port was entered. */
  readonly status: 'T' | 'E';
  /** The statements the connection had sent in that transaction so far (from its BEGIN, the last five). */
  readonly statements: readonly string[];
}

interface Watched {
  /** Statement texts sent and not answered yet, in order. */
  readonly pending: string[];
  /** The last statements sent, for the report. */
  readonly recent: string[];
}

const OPENS = /^\s*(?:BEGIN|START\s+TRANSACTION)\b/i;
const CLOSES = /^\s*(?:COMMIT|ROLLBACK|END|ABORT)\b/i;

function textOf(q: unknown): string | null {
  if (typeof q === 'string') return q;
  if (q && typeof q === 'object' && typeof (q as { text?: unknown }).text === 'string')
    return (q as { text: string }).text;
  return null;
}

/** The transaction status after the statements of `texts` (each possibly several, `;`-separated). */
function statusAfter(status: string | null, texts: readonly string[]): string | null {
  let s = status;
  for (const t of texts)
    for (const statement of t.split(';')) {
      if (OPENS.test(statement)) s = 'T';
      else if (CLOSES.test(statement)) s = 'I';
    }
  return s;
}

export class TransactionWatch {
  private readonly out = new Map<PoolClient, Watched>();
  private readonly clients = new WeakMap<PoolClient, Watched>();
  readonly calls: PortCall[] = [];
  readonly violations: Violation[] = [];

  constructor(pool: Pool) {
    pool.on('acquire', (client) => this.out.set(client, this.follow(client)));
    pool.on('release', (_err, client) => this.out.delete(client));
    pool.on('remove', (client) => this.out.delete(client));
  }

  /** Forgets the calls and violations seen so far (the connections stay followed). */
  reset(): void {
    this.calls.length = 0;
    this.violations.length = 0;
  }

  /** Records a call of `port` and a violation for every checked-out connection with an open transaction. */
  enter(port: PortCall['port'], name: string): void {
    this.calls.push({ port, name });
    for (const [client, w] of this.out) {
      const status = statusAfter(client.getTransactionStatus(), w.pending);
      if (status === 'T' || status === 'E') this.violations.push({ port, name, status, statements: [...w.recent] });
    }
  }

  /** `router` hands out providers whose `stream` enters the watch first. */
  watchModels(router: ModelRouter): void {
    const resolve = router.resolve.bind(router);
    router.resolve = (policy, needs) => {
      const route = resolve(policy, needs);
      return { ...route, provider: this.watchedProvider(route.provider) };
    };
  }

  /** `registry` hands out tools whose `execute` enters the watch first. */
  watchTools(registry: ToolRegistry): void {
    const get = registry.get.bind(registry);
    registry.get = (name) => {
      const tool = get(name);
      return tool && this.watchedTool(tool);
    };
  }

  watchedProvider(provider: ModelProvider): ModelProvider {
    const watched = Object.create(provider) as ModelProvider;
    watched.stream = (...args: Parameters<ModelProvider['stream']>) => {
      this.enter('model', `${provider.name}:${args[1].model}`);
      return provider.stream(...args);
    };
    return watched;
  }

  watchedTool(tool: Tool): Tool {
    return {
      spec: tool.spec,
      execute: (args, ctx) => {
        this.enter('tool', tool.spec.name);
        return tool.execute(args, ctx);
      },
    };
  }

  /** Follows the statements `client` sends (once per connection: a pooled one is acquired many times). */
  private follow(client: PoolClient): Watched {
    const known = this.clients.get(client);
    if (known) return known;
    const w: Watched = { pending: [], recent: [] };
    this.clients.set(client, w);
    const query = client.query.bind(client) as (...a: unknown[]) => unknown;
    const settle = (text: string) => {
      const i = w.pending.indexOf(text);
      if (i >= 0) w.pending.splice(i, 1);
    };
    (client as { query: unknown }).query = (...a: unknown[]) => {
      const text = textOf(a[0]);
      if (text === null) return query(...a);
      w.pending.push(text);
      if (OPENS.test(text)) w.recent.length = 0;
      w.recent.push(text.slice(0, 120));
      if (w.recent.length > 5) w.recent.shift();
      const last = a.at(-1);
      if (typeof last === 'function') {
        const cb = last as (...r: unknown[]) => unknown;
        return query(...a.slice(0, -1), (...r: unknown[]) => {
          settle(text);
          return cb(...r);
        });
      }
      const r = query(...a);
      if (r && typeof (r as Promise<unknown>).then === 'function')
        (r as Promise<unknown>).then(
          () => settle(text),
          () => settle(text),
        );
      return r;
    };
    return w;
  }
}
