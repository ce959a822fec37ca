import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { silentLogger } from '../src/adapters/logging/pino-logger';
import { Database } from '../src/adapters/postgres/database';
import { PgEventStore } from '../src/adapters/postgres/event-store/pg-event-store';
import { PgNotificationInbox } from '../src/adapters/postgres/notifications/pg-notification-inbox';
import { PgNotifier } from '../src/adapters/postgres/notifications/pg-notifier';
import { PgWebhooks } from '../src/adapters/postgres/notifications/pg-webhooks';
import { systemClock } from '../src/adapters/system-clock';
import { NotificationProducer } from '../src/application/notifications/notification-producer';
import type { Principal } from '../src/domain/principal';
import { openBenchDatabase } from './support/bench-database';
import { envNumber } from './support/env';
import { formatCount, printTable } from './support/print-table';

const RECIPIENT: Principal = { tenantId: 'bench', principalId: 'bench-user', roles: new Set(), scopes: new Set() };

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** M loopback receivers answering 200; each records when a notification's first POST reached it. */
async function receivers(m: number, firstAt: Map<string, number>, onPost: () => void): Promise<http.Server[]> {
  return Promise.all(
    Array.from({ length: m }, async () => {
      const server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const at = performance.now();
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { delivery_id: string };
          if (!firstAt.has(body.delivery_id)) firstAt.set(body.delivery_id, at);
          onPost();
          res.writeHead(200).end();
        });
      });
      server.keepAliveTimeout = 30_000;
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return server;
    }),
  );
}

/**
 * `npm run bench -- notifications` (issue 31): N approval notifications (kind `approval.requested`,
 * each appended with its own commit through the notification decider, `POST /v1/notifications`'s
 * path) to M webhook receivers on loopback, while the notifier (NOTIFIERS concurrent loops, as many
 * workers would run) fans out and delivers. Measures trigger commit → first delivery attempt
 * (p50/p99, per delivery) and the drain rate (deliveries/s from the first commit to the last POST).
 * Knobs: BENCH_NOTIFICATIONS (default 2000), BENCH_RECEIVERS (20), BENCH_NOTIFIERS (4),
 * BENCH_PRODUCERS (8 concurrent appenders).
 */
export async function runNotificationsBench(): Promise<void> {
  process.env.WEBHOOK_ALLOW_PRIVATE = '1';
  const n = envNumber('BENCH_NOTIFICATIONS', 2000);
  const m = envNumber('BENCH_RECEIVERS', 20);
  const notifiers = envNumber('BENCH_NOTIFIERS', 4);
  const producers = envNumber('BENCH_PRODUCERS', 8);
  const bench = await openBenchDatabase((line) => console.error(line));
  const db = new Database(bench.url, 20);
  const firstAt = new Map<string, number>();
  let posts = 0;
  const servers = await receivers(m, firstAt, () => posts++);
  try {
    const hooks = new PgWebhooks(db);
    for (const s of servers)
      await hooks.register(RECIPIENT, `http://127.0.0.1:${(s.address() as AddressInfo).port}/hook`, [
        'approval.requested',
      ]);
    const inbox = new PgNotificationInbox(db);
    const producer = new NotificationProducer(new PgEventStore(db, systemClock), inbox);
    const committedAt = new Map<string, number>();
    let stop = false;
    const loops = Array.from({ length: notifiers }, async () => {
      const notifier = new PgNotifier(db, silentLogger, { batch: 200 });
      while (!stop) if ((await notifier.runOnce()) === 0) await new Promise((r) => setTimeout(r, 5));
    });
    const start = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: producers }, async () => {
        for (let i = next++; i < n; i = next++) {
          const r = await producer.post(RECIPIENT, `bench-${i}`, {
            principalId: RECIPIENT.principalId,
            kind: 'approval.requested',
            summary: { title: 'An action is waiting for your approval', toolName: 'email.send' },
            links: {},
          });
          committedAt.set(r.notification.id, performance.now());
        }
      }),
    );
    const appendSeconds = (performance.now() - start) / 1000;
    const total = n * m;
    const deadline = Date.now() + 600_000;
    while (posts < total && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const end = performance.now();
    stop = true;
    await Promise.all(loops);
    const rows = await db.query<{ id: string; notification_id: string }>(
      'SELECT id, notification_id FROM notification_deliveries',
    );
    const latencies: number[] = [];
    for (const d of rows.rows) {
      const at = firstAt.get(d.id);
      const c = committedAt.get(d.notification_id);
      if (at !== undefined && c !== undefined) latencies.push(at - c);
    }
    latencies.sort((a, b) => a - b);
    const drain = posts / ((end - start) / 1000);
    console.log(
      `notifications bench: ${formatCount(n)} notifications × ${m} receivers = ${formatCount(total)} deliveries; ${notifiers} notifier loops, ${producers} producers; server ${bench.server}`,
    );
    printTable(
      [{ header: 'measure' }, { header: 'value', right: true }, { header: 'target' }],
      [
        ['notifications appended /s', formatCount(n / appendSeconds), ''],
        ['commit → first attempt p50 (ms)', pct(latencies, 50).toFixed(0), '≤ 100'],
        ['commit → first attempt p99 (ms)', pct(latencies, 99).toFixed(0), '≤ 1000'],
        ['deliveries made', formatCount(posts), formatCount(total)],
        ['drain rate (deliveries/s)', formatCount(drain), '≥ 1,000'],
      ],
    );
  } finally {
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
    await db.close();
    await bench.close();
  }
}
