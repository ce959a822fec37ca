import { NotFoundError, ValidationError } from '../../domain/errors';
import type { StoredEvent } from '../../domain/events/payloads';
import {
  buildTrajectory,
  consentAllows,
  finalizeTrajectory,
  type TrajectoryDocument,
} from '../../domain/trajectory/document';
import type { ExportFilters, ExportProgress, ExportRun, TrajectoryExports } from '../../ports/trajectory';
import {
  decodeEvent,
  EVENT_COLUMNS_OF_E,
  RUN_EVENTS_JOIN,
  UUID_PATTERN,
  type Database,
  type EventRow,
} from '../postgres';
import { replaceSecrets, TrajectoryVerificationError, verifyDocument } from './redaction';

/** Runs read per page: their terminal events in one query, then all their events in a second. */
const PAGE_SIZE = 250;
/** How long an export waits for transactions that were in progress when it started (ADR 0016). */
const HORIZON_WAIT_MS = 5000;

const TERMINAL_TYPES: Record<ExportFilters['status'], readonly string[]> = {
  completed: ['run.completed'],
  failed: ['run.failed', 'run.cancelled'],
  all: ['run.completed', 'run.failed', 'run.cancelled'],
};

interface Position {
  readonly tx: string;
  readonly id: number;
}

/** Cursors are opaque: base64url of `["t1", transaction id, event id]` of the last run examined. */
export function encodeExportCursor(p: Position): string {
  return Buffer.from(JSON.stringify(['t1', p.tx, p.id])).toString('base64url');
}

export function decodeExportCursor(cursor: string): Position {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = null;
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 3 ||
    parsed[0] !== 't1' ||
    typeof parsed[1] !== 'string' ||
    !/^[0-9]{1,20}$/.test(parsed[1]) ||
    typeof parsed[2] !== 'number' ||
    !Number.isSafeInteger(parsed[2]) ||
    parsed[2] < 0
  ) {
    throw new ValidationError('export cursor is not valid (use the cursor printed by an earlier export)', {
      field: 'cursor',
    });
  }
  return { tx: parsed[1], id: parsed[2] };
}

export interface ExporterDeps {
  readonly db: Database;
  /** The system prompt of an agent version (platform policy + instructions), or null when unknown. */
  readonly systemPrompt: (agentId: string, version: number) => Promise<string | null>;
}

/**
 * Streams a tenant's finished runs as trajectory documents (plan §31). Runs are selected by their
 * terminal event in global log order `(transaction_id, id)` behind the safe horizon, so a cursor never
 * skips a late commit; each page's events are read in one query, so memory stays bounded by the page.
 */
export class TrajectoryExporter implements TrajectoryExports {
  private readonly prompts = new Map<string, Promise<string | null>>();

  constructor(private readonly deps: ExporterDeps) {}

  /** Checks the filters against the tenant before anything is written (unknown run or session: 404). */
  async validate(tenantId: string, f: ExportFilters): Promise<void> {
    if (!['completed', 'failed', 'all'].includes(f.status))
      throw new ValidationError(`status must be completed, failed or all (got ${String(f.status)})`, {
        field: 'status',
      });
    if (f.cursor !== undefined) decodeExportCursor(f.cursor);
    if (f.since !== undefined && (typeof f.since !== 'string' || Number.isNaN(Date.parse(f.since))))
      throw new ValidationError(`since is not a date: ${String(f.since)} (use ISO-8601, e.g. 2026-11-30)`, {
        field: 'since',
      });
    if (f.limit !== undefined && (!Number.isInteger(f.limit) || f.limit < 1))
      throw new ValidationError('limit must be a positive integer', { field: 'limit' });
    if (f.runId !== undefined) {
      if (typeof f.runId !== 'string' || !UUID_PATTERN.test(f.runId))
        throw new ValidationError(`run id is not a UUID: ${String(f.runId)}`, { field: 'run_id' });
      const r = await this.deps.db.query<{ status: string }>(
        `SELECT status FROM runs WHERE id = $1 AND tenant_id = $2`,
        [f.runId, tenantId],
      );
      const run = r.rows[0];
      if (!run) throw new NotFoundError(`run ${f.runId} not found`, { runId: f.runId });
      if (!['completed', 'failed', 'cancelled'].includes(run.status))
        throw new ValidationError(`run ${f.runId} has not finished (${run.status}); only finished runs are exported`, {
          runId: f.runId,
          status: run.status,
        });
    }
    if (f.sessionId !== undefined) {
      if (typeof f.sessionId !== 'string' || !UUID_PATTERN.test(f.sessionId))
        throw new ValidationError(`session id is not a UUID: ${String(f.sessionId)}`, { field: 'session_id' });
      const s = await this.deps.db.query(`SELECT 1 FROM sessions WHERE id = $1 AND tenant_id = $2`, [
        f.sessionId,
        tenantId,
      ]);
      if (s.rows.length === 0) throw new NotFoundError(`session ${f.sessionId} not found`, { sessionId: f.sessionId });
    }
  }

  /**
   * Exports every matching run through `write` (one JSON line each, awaited for backpressure).
   * Throws `TrajectoryVerificationError` when a finished document still contains a credential; the
   * caller then discards whatever it wrote (the file writers write to a temp file and rename at the end).
   */
  async export(
    tenantId: string,
    f: ExportFilters,
    write: (line: string) => Promise<void>,
    onProgress?: (p: ExportProgress) => void,
  ): Promise<ExportRun> {
    await this.validate(tenantId, f);
    const heldBack = !(await this.waitForHorizon());
    let after: Position = f.cursor !== undefined ? decodeExportCursor(f.cursor) : { tx: '0', id: 0 };
    let lastExamined: Position | null = null;
    const consent = new Map<string, { status: 'granted' | 'withdrawn'; version: number } | undefined>();
    const consentVersions = new Map<string, number>();
    const principals: Record<string, number> = {};
    let scanned = 0;
    let exported = 0;
    let skippedNoConsent = 0;
    let succeeded = 0;
    let failed = 0;
    let redactions = 0;
    let bytes = 0;
    const limit = f.limit ?? Number.POSITIVE_INFINITY;

    // One page of lookahead: the next page is read while this one is built, redacted and written.
    const fetchPage = (from: Position) => this.terminalPage(tenantId, f, from);
    let pending: Promise<Awaited<ReturnType<typeof fetchPage>>> = fetchPage(after);
    try {
      pages: for (;;) {
        const page = await pending;
        if (!page) break;
        const last = page.rows[page.rows.length - 1];
        after = { tx: last.tx, id: Number(last.id) };
        pending = page.rows.length < PAGE_SIZE ? Promise.resolve(null) : fetchPage(after);
        await this.loadConsent(tenantId, page.byRun, consent);
        let chunk = '';
        for (const row of page.rows) {
          scanned++;
          lastExamined = { tx: row.tx, id: Number(row.id) };
          const doc = await this.documentFor(page.byRun.get(row.run_id) ?? [], consent);
          if (doc === 'no_consent') skippedNoConsent++;
          else if (doc !== null) {
            const line = `${JSON.stringify(doc)}\n`;
            chunk += line;
            exported++;
            bytes += Buffer.byteLength(line);
            redactions += doc.redaction.replaced;
            if (doc.outcome.label === 'succeeded') succeeded++;
            else failed++;
            principals[doc.principal_id] = (principals[doc.principal_id] ?? 0) + 1;
            const c = consent.get(doc.principal_id);
            if (c) consentVersions.set(doc.principal_id, c.version);
          }
          if (exported >= limit) {
            if (chunk !== '') await write(chunk);
            break pages;
          }
        }
        // One write per page: fewer, larger writes.
        if (chunk !== '') await write(chunk);
        onProgress?.({ scanned, exported, skippedNoConsent });
      }
    } finally {
      // A lookahead still in flight when the export stops early (limit, abort) must not go unhandled.
      pending.catch(() => undefined);
    }
    const cursor = lastExamined ? encodeExportCursor(lastExamined) : (f.cursor ?? null);
    return {
      summary: {
        scanned,
        exported,
        skippedNoConsent,
        byLabel: { succeeded, failed },
        redactions,
        bytes,
        cursor,
        principals,
        heldBack,
      },
      consentVersions,
    };
  }

  /** The next page of matching terminal events after `from`, with every event of their runs. */
  private async terminalPage(tenantId: string, f: ExportFilters, from: Position) {
    const page = await this.deps.db.query<{ run_id: string; tx: string; id: string }>(
      `SELECT run_id, transaction_id::text AS tx, id FROM events
        WHERE tenant_id = $1
          AND event_type = ANY($2::text[])
          AND (transaction_id, id) > ($3::xid8, $4::bigint)
          AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
          AND ($5::uuid IS NULL OR session_id = $5::uuid)
          AND ($6::uuid IS NULL OR run_id = $6::uuid)
          AND ($7::timestamptz IS NULL OR created_at >= $7::timestamptz)
        ORDER BY transaction_id, id
        LIMIT $8`,
      [
        tenantId,
        TERMINAL_TYPES[f.status],
        from.tx,
        from.id,
        f.sessionId ?? null,
        f.runId ?? null,
        f.since ?? null,
        PAGE_SIZE,
      ],
    );
    if (page.rows.length === 0) return null;
    return { rows: page.rows, byRun: await this.eventsOf(page.rows.map((r) => r.run_id)) };
  }

  private async documentFor(
    events: readonly StoredEvent[],
    consent: ReadonlyMap<string, { status: 'granted' | 'withdrawn'; version: number } | undefined>,
    nested = false,
  ): Promise<TrajectoryDocument | 'no_consent' | null> {
    const queued = events.find((e) => e.type === 'run.queued');
    if (!queued || queued.type !== 'run.queued') return null;
    const draft = buildTrajectory(events, {
      systemPrompt: await this.systemPrompt(queued.data.agentId, queued.data.agentVersion),
    });
    if (!draft) return null;
    if (!consentAllows(draft.consent, consent.get(draft.doc.principal_id))) return 'no_consent';
    const replaced = replaceSecrets(draft.messages);
    const doc = await this.withTree(
      finalizeTrajectory(draft, { replaced: replaced.replaced, rules: [...replaced.rules] }),
      events,
      consent,
      nested,
    );
    const finding = verifyDocument(doc);
    if (finding) {
      throw new TrajectoryVerificationError(
        `run ${doc.run_id}: ${finding.path} still matches the verifier's ${finding.rule} rule after redaction; ` +
          'the export was aborted and nothing was written',
        { runId: doc.run_id, path: finding.path, rule: finding.rule },
      );
    }
    return doc;
  }

  /**
   * The run's place in its tree (issue 32): a child's `parent_run_id`, and a parent's finished
   * children (every `run.waiting_for_children` round, in order) as nested documents, each built,
   * consent-checked and redacted like a run of its own. Delegation is one level deep, so a nested
   * document has no children. A child is also exported on its own line, with its `parent_run_id`.
   */
  private async withTree(
    doc: TrajectoryDocument,
    events: readonly StoredEvent[],
    consent: ReadonlyMap<string, { status: 'granted' | 'withdrawn'; version: number } | undefined>,
    nested: boolean,
  ): Promise<TrajectoryDocument> {
    const delegated = events.find((e) => e.type === 'run.delegated');
    const out = delegated?.type === 'run.delegated' ? { ...doc, parent_run_id: delegated.data.parentRunId } : doc;
    const childIds = nested
      ? []
      : events.flatMap((e) => (e.type === 'run.waiting_for_children' ? e.data.children.map((c) => c.runId) : []));
    if (childIds.length === 0) return out;
    const byRun = await this.eventsOf(childIds);
    const children: TrajectoryDocument[] = [];
    for (const id of childIds) {
      const child = await this.documentFor(byRun.get(id) ?? [], consent, true);
      if (child !== null && child !== 'no_consent') children.push(child);
    }
    return { ...out, children };
  }

  private systemPrompt(agentId: string, version: number): Promise<string | null> {
    const key = `${agentId}@${version}`;
    let p = this.prompts.get(key);
    if (!p) {
      p = this.deps.systemPrompt(agentId, version).catch(() => null);
      this.prompts.set(key, p);
    }
    return p;
  }

  private async eventsOf(runIds: readonly string[]): Promise<Map<string, StoredEvent[]>> {
    const res = await this.deps.db.query<EventRow>(
      `SELECT ${EVENT_COLUMNS_OF_E} FROM runs r JOIN events e ON ${RUN_EVENTS_JOIN('r')}
        WHERE r.id = ANY($1::uuid[]) ORDER BY e.run_id, e.id`,
      [runIds],
    );
    const out = new Map<string, StoredEvent[]>();
    for (const row of res.rows) {
      const e = decodeEvent(row);
      const list = out.get(e.runId ?? '');
      if (list) list.push(e);
      else out.set(e.runId ?? '', [e]);
    }
    return out;
  }

  /** The principals' current consent, read once per export (a withdrawal mid-export is re-checked at the end). */
  private async loadConsent(
    tenantId: string,
    byRun: ReadonlyMap<string, readonly StoredEvent[]>,
    into: Map<string, { status: 'granted' | 'withdrawn'; version: number } | undefined>,
  ): Promise<void> {
    const wanted = new Set<string>();
    for (const events of byRun.values())
      for (const e of events)
        if (e.type === 'run.queued' && !into.has(e.data.principalId)) wanted.add(e.data.principalId);
    if (wanted.size === 0) return;
    const res = await this.deps.db.query<{ principal_id: string; status: 'granted' | 'withdrawn'; version: number }>(
      `SELECT principal_id, status, version FROM trajectory_consents WHERE tenant_id = $1 AND principal_id = ANY($2::text[])`,
      [tenantId, [...wanted]],
    );
    for (const p of wanted) into.set(p, undefined);
    for (const r of res.rows) into.set(r.principal_id, { status: r.status, version: r.version });
  }

  /** Waits (bounded) until every transaction in progress when the export started has finished. */
  private async waitForHorizon(): Promise<boolean> {
    const start = await this.deps.db.query<{ x: string }>(`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x`);
    const target = start.rows[0].x;
    const deadline = Date.now() + HORIZON_WAIT_MS;
    for (;;) {
      const r = await this.deps.db.query<{ ok: boolean }>(
        `SELECT pg_snapshot_xmin(pg_current_snapshot()) >= $1::xid8 AS ok`,
        [target],
      );
      if (r.rows[0].ok) return true;
      if (Date.now() > deadline) return false;
      await new Promise((res) => setTimeout(res, 25));
    }
  }
}
