import { createHash } from 'node:crypto';
import { combine, type Actor } from '../../domain/deciders/decider';
import { scheduleDecider, scheduleStateOf, type ScheduleCommand } from '../../domain/deciders/schedule';
import { sessionDecider } from '../../domain/deciders/session';
import { ConcurrencyConflict, ConflictError, NotFoundError, ValidationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { SCHEDULE_STREAM_PRINCIPAL, type ScheduleDefinition } from '../../domain/schedules/schedule';
import type { AgentCatalog } from '../../ports/agent-catalog';
import type { Clock, IdFactory } from '../../ports/clock';
import type { EventStore } from '../../ports/event-store';
import type { Page } from '../../ports/read-models';
import type { ScheduleCalendar } from '../../ports/schedule-calendar';
import type { OccurrenceRecord, ScheduleOperations, ScheduleReadModel, ScheduleWakeup } from '../../ports/schedules';
import { handleCommand } from '../command-handler';
import {
  cadenceFromWire,
  limitsOf,
  maxFailuresOf,
  messageOf,
  misfireOf,
  scopesOf,
  titleOf,
  type ScheduleRequest,
} from './schedule-input';
import { scheduleViewOf, type ScheduleView } from './schedule-view';

export interface ScheduleServiceDeps {
  readonly store: EventStore;
  readonly reads: ScheduleReadModel;
  readonly agents: AgentCatalog;
  readonly calendar: ScheduleCalendar;
  readonly wakeup: ScheduleWakeup;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly defaultAgentId: string;
  readonly maxMessageChars: number;
  /** Scopes a run can use (tools.use and the tools' own): a schedule requests these by default. */
  readonly executionScopes: readonly string[];
}

/** What an update may change; the pinned agent and the requested scopes stay those of the first revision. */
export interface ScheduleUpdate {
  readonly message?: unknown;
  readonly title?: unknown;
  readonly cadence?: unknown;
  readonly limits?: unknown;
  readonly misfire?: unknown;
  readonly max_consecutive_failures?: unknown;
}

export interface CreatedSchedule {
  readonly schedule: ScheduleView;
  /** True when an earlier request with the same idempotency key was answered again. */
  readonly replayed: boolean;
}

/**
 * Schedules for every surface — the HTTP API, the CLI and the conversational schedule tools (ADR
 * 0034): validation once, the schedule decider for every change, one append per change in the
 * schedule's own stream, and a nudge to the schedulers. Every call names its principal, and a
 * principal reaches only its own schedules (anything else is not found).
 */
export class ScheduleService implements ScheduleOperations {
  constructor(private readonly d: ScheduleServiceDeps) {}

  async create(
    principal: Principal,
    req: ScheduleRequest,
    opts: { readonly idempotencyKey?: string | null; readonly actor?: Actor } = {},
  ): Promise<CreatedSchedule> {
    const now = this.d.clock.nowIso();
    const definition = await this.definitionOf(principal, req, now);
    const nextFireAt = this.d.calendar.nextAfter(definition.cadence, now);
    const key = opts.idempotencyKey ?? null;
    if (key !== null && (key.length === 0 || key.length > 255))
      throw new ValidationError('Idempotency-Key must be 1 to 255 characters', { field: 'idempotency_key' });
    const id = key === null ? this.d.ids.uuid() : idFromKey(principal, key);
    const actor = opts.actor ?? { actorType: 'user', actorId: principal.principalId };
    try {
      await handleCommand(this.d.store, {
        load: async () => ({ sessionId: id, tenantId: principal.tenantId, state: null }),
        decide: () =>
          combine(
            sessionDecider.decide(
              {
                kind: 'CreateSession',
                actor,
                agentId: definition.agentId,
                agentVersion: definition.agentVersion,
                principalId: SCHEDULE_STREAM_PRINCIPAL,
                title: `Schedule stream: ${definition.title}`,
                metadata: { stream: 'schedule', owner: principal.principalId },
              },
              sessionDecider.initialState(),
            ),
            scheduleDecider.decide(
              { kind: 'CreateSchedule', actor, principalId: principal.principalId, definition, nextFireAt },
              scheduleDecider.initialState(),
            ),
          ),
        result: () => undefined,
        exhausted: () => new ConcurrencyConflict('the schedule could not be created; try again', {}),
      });
    } catch (e) {
      if (!(e instanceof ConflictError) || key === null) throw e;
      return { schedule: this.replay(await this.get(principal, id), definition), replayed: true };
    }
    await this.d.wakeup.nudge();
    return { schedule: await this.get(principal, id), replayed: false };
  }

  async get(principal: Principal, id: string): Promise<ScheduleView> {
    const loaded = await this.d.reads.load(principal, id);
    if (!loaded) throw notFound(id);
    return scheduleViewOf(loaded.row, this.d.calendar);
  }

  async list(
    principal: Principal,
    limit: number,
    cursor: string | null,
    status: string | null = null,
  ): Promise<Page<ScheduleView>> {
    const page = await this.d.reads.list(principal, limit, cursor, status);
    return { items: page.items.map((r) => scheduleViewOf(r, this.d.calendar)), nextCursor: page.nextCursor };
  }

  async occurrences(
    principal: Principal,
    id: string,
    limit: number,
    cursor: string | null,
  ): Promise<Page<OccurrenceRecord>> {
    const page = await this.d.reads.occurrences(principal, id, limit, cursor);
    if (!page) throw notFound(id);
    return page;
  }

  /** A new revision: only future occurrences change (the next firing is recomputed from now). */
  async update(
    principal: Principal,
    id: string,
    patch: ScheduleUpdate,
    expectedRevision: number | null = null,
    actor?: Actor,
  ): Promise<ScheduleView> {
    return this.change(principal, id, async (current, now) => {
      const definition: ScheduleDefinition = {
        ...current,
        message: patch.message === undefined ? current.message : messageOf(patch.message, this.d.maxMessageChars),
        cadence: patch.cadence === undefined ? current.cadence : this.cadenceOf(patch.cadence, now),
        limits: patch.limits === undefined ? current.limits : limitsOf(patch.limits, current.limits),
        misfire: patch.misfire === undefined ? current.misfire : misfireOf(patch.misfire),
        maxConsecutiveFailures:
          patch.max_consecutive_failures === undefined
            ? current.maxConsecutiveFailures
            : maxFailuresOf(patch.max_consecutive_failures),
      };
      const title = patch.title === undefined ? current.title : titleOf(patch.title, definition.message);
      const next = { ...definition, title };
      return {
        kind: 'UpdateSchedule',
        actor: actor ?? userActor(principal),
        expectedRevision,
        definition: next,
        nextFireAt: this.d.calendar.nextAfter(next.cadence, now),
      };
    });
  }

  pause(
    principal: Principal,
    id: string,
    actor?: Actor,
    expectedRevision: number | null = null,
  ): Promise<ScheduleView> {
    return this.change(
      principal,
      id,
      async () => ({ kind: 'PauseSchedule', actor: actor ?? userActor(principal) }),
      expectedRevision,
    );
  }

  /** Resumes without backfill: the next firing is the first instant after now. */
  resume(
    principal: Principal,
    id: string,
    actor?: Actor,
    expectedRevision: number | null = null,
  ): Promise<ScheduleView> {
    return this.change(
      principal,
      id,
      async (current, now) => ({
        kind: 'ResumeSchedule',
        actor: actor ?? userActor(principal),
        nextFireAt: this.d.calendar.nextAfter(current.cadence, now),
      }),
      expectedRevision,
    );
  }

  /** Terminal; never cancels a run an occurrence already started. */
  cancel(
    principal: Principal,
    id: string,
    reason: string | null = null,
    actor?: Actor,
    expectedRevision: number | null = null,
  ): Promise<ScheduleView> {
    if (reason !== null && reason.length > 1000)
      throw new ValidationError('reason must be at most 1000 characters', { field: 'reason' });
    return this.change(
      principal,
      id,
      async () => ({ kind: 'CancelSchedule', actor: actor ?? userActor(principal), reason }),
      expectedRevision,
    );
  }

  /** A cadence in words and its next `count` firings (UTC and local): what an approval shows. */
  preview(cadence: unknown, count: number) {
    const now = this.d.clock.nowIso();
    const c = this.cadenceOf(cadence, now);
    const next: string[] = [];
    for (
      let t = this.d.calendar.nextAfter(c, now);
      t !== null && next.length < count;
      t = this.d.calendar.nextAfter(c, t)
    )
      next.push(t);
    return {
      description: this.d.calendar.describe(c),
      next,
      timeZone: c.timeZone,
      local: next.map((t) => this.d.calendar.local(t, c.timeZone)),
    };
  }

  /** The cadence of a request, checked by the calendar (zone, cron, a firing in the future). */
  cadenceOf(raw: unknown, now: string) {
    const cadence = cadenceFromWire(raw, Date.parse(now));
    this.d.calendar.check(cadence, now);
    return cadence;
  }

  private async change(
    principal: Principal,
    id: string,
    command: (current: ScheduleDefinition, now: string) => Promise<ScheduleCommand>,
    expectedRevision: number | null = null,
  ): Promise<ScheduleView> {
    await handleCommand(this.d.store, {
      load: async () => {
        const loaded = await this.d.reads.load(principal, id);
        if (!loaded) throw notFound(id);
        const state = scheduleStateOf(loaded.row);
        if (expectedRevision !== null && expectedRevision !== state.revision)
          throw new ConflictError(`schedule ${id} is at revision ${state.revision}, not ${expectedRevision}`, {
            scheduleId: id,
            revision: state.revision,
            reason: 'stale_revision',
          });
        const cmd = await command(state.definition!, this.d.clock.nowIso());
        return {
          sessionId: id,
          tenantId: principal.tenantId,
          state: { state, cmd },
          expectedSequence: loaded.lastSequence,
        };
      },
      decide: ({ state, cmd }) => scheduleDecider.decide(cmd, state),
      result: () => undefined,
      exhausted: () => new ConcurrencyConflict(`schedule ${id} kept changing; try again`, { scheduleId: id }),
    });
    await this.d.wakeup.nudge();
    return this.get(principal, id);
  }

  private async definitionOf(principal: Principal, req: ScheduleRequest, now: string): Promise<ScheduleDefinition> {
    const message = messageOf(req.message, this.d.maxMessageChars);
    const cadence = this.cadenceOf(req.cadence, now);
    const agentId = req.agent_id === undefined || req.agent_id === null ? this.d.defaultAgentId : req.agent_id;
    if (typeof agentId !== 'string' || agentId === '')
      throw new ValidationError('agent_id must be a non-empty string', { field: 'agent_id' });
    const agent = await this.d.agents.current(agentId);
    if (!agent) throw new NotFoundError(`unknown agent "${agentId}"`, { field: 'agent_id', agentId });
    return {
      title: titleOf(req.title, message),
      message,
      cadence,
      agentId: agent.id,
      agentVersion: agent.version,
      scopes: scopesOf(req.scopes, principal, this.d.executionScopes),
      limits: limitsOf(req.limits, agent.limits),
      misfire: misfireOf(req.misfire),
      maxConsecutiveFailures: maxFailuresOf(req.max_consecutive_failures),
    };
  }

  /** The schedule an idempotency key already created, if the request is the same one. */
  private replay(existing: ScheduleView, asked: ScheduleDefinition): ScheduleView {
    const same =
      existing.revision === 1 &&
      JSON.stringify([existing.message, existing.cadence, existing.agentId, existing.scopes]) ===
        JSON.stringify([asked.message, asked.cadence, asked.agentId, asked.scopes]);
    if (!same)
      throw new ConflictError('this Idempotency-Key was already used with a different request', {
        scheduleId: existing.id,
        reason: 'idempotency_key_reused',
      });
    return existing;
  }
}

function userActor(principal: Principal): Actor {
  return { actorType: 'user', actorId: principal.principalId };
}

function notFound(id: string): NotFoundError {
  return new NotFoundError(`schedule ${id} not found`, { scheduleId: id });
}

/** A schedule id derived from the principal's idempotency key: a replay names the same schedule. */
function idFromKey(principal: Principal, key: string): string {
  const h = createHash('sha256')
    .update(`schedule\u0000${principal.tenantId}\u0000${principal.principalId}\u0000${key}`)
    .digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
