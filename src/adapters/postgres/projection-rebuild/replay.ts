import type { Queryable } from '../database';
import { eventPages } from './event-pages';
import type { RebuildTarget } from './rebuild-target';
import { SessionFolder } from './session-folder';
import { ShadowWriter } from './shadow-writer';

/** Rows (plus one per session for its progress) buffered before a bulk insert into the shadow tables. */
const FLUSH_ROWS = 5000;

export interface ReplayOptions {
  /** Connection the log is read from. */
  readonly reader: Queryable;
  /** Connection the shadow tables are written on; when it differs from `reader`, writes overlap reads. */
  readonly writer: Queryable;
  readonly targets: readonly RebuildTarget[];
  readonly batchSize: number;
  /** Only these sessions (the catch-up); default the whole log. */
  readonly sessionIds?: readonly string[];
  /** Called after each page is folded, with the number of events in it. */
  readonly onPage?: (events: number) => void;
}

/** Folds the log (or some sessions of it) into the shadow tables. Returns the number of events folded. */
export async function replay(opts: ReplayOptions): Promise<number> {
  const writer = new ShadowWriter(opts.writer, opts.targets, FLUSH_ROWS, opts.writer !== opts.reader);
  const folder = new SessionFolder(opts.targets, (s) => writer.add(s));
  let events = 0;
  for await (const page of eventPages(opts.reader, { batchSize: opts.batchSize, sessionIds: opts.sessionIds })) {
    for (const e of page) folder.fold(e);
    events += page.length;
    await writer.maybeFlush();
    opts.onPage?.(page.length);
  }
  folder.finish();
  await writer.close();
  return events;
}
