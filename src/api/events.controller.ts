import { ApiErrors, ApiSuccess } from './openapi';
import { Controller, Get, Inject, Param, Query, Req, Res } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiHeader, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { GetRunQuery } from '../application/runs/queries';
import { GetSessionQuery } from '../application/sessions/queries';
import { EVENT_STORE } from '../application/tokens';
import { ValidationError } from '../domain/errors';
import type { Principal } from '../domain/principal';
import { isTerminal } from '../domain/run/status';
import type { EventStore } from '../ports/event-store';
import type { Logger } from '../ports/logger';
import { API_SETTINGS, STREAM_HUBS, type ApiSettings } from './api-tokens';
import { Auth, RequireScope } from './auth/decorators';
import { StreamQuery } from './dto/requests';
import { EventStream } from './sse/event-stream';
import { openSse, type SseRequest, type SseResponse } from './sse/sse-response';
import type { StreamHubs } from './sse/stream-hubs';
import { uuidParam } from './validation';

export const API_LOGGER = Symbol('ApiLogger');

function lastEventId(req: SseRequest, q: StreamQuery): number {
  const header = req.headers['last-event-id'];
  const raw = typeof header === 'string' && header.trim() !== '' ? header.trim() : q.last_event_id;
  if (raw === undefined) return 0;
  if (!/^\d{1,15}$/.test(raw))
    throw new ValidationError('Last-Event-ID must be a non-negative integer (a session sequence)', {
      field: 'last_event_id',
    });
  return Number(raw);
}

/**
 * Server-sent event streams of persisted events (id = session sequence) and transient deltas (no id),
 * replayed from the database after Last-Event-ID on any API process (docs/architecture.md, ADR 0011).
 */
@ApiTags('events')
@Controller('v1')
export class EventsController {
  constructor(
    private readonly queries: QueryBus,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(STREAM_HUBS) private readonly hubs: StreamHubs,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    @Inject(API_LOGGER) private readonly log: Logger,
  ) {}

  @Get('sessions/:id/events')
  @RequireScope('sessions.read')
  @ApiProduces('text/event-stream')
  @ApiHeader({ name: 'Last-Event-ID', required: false })
  @ApiOperation({ summary: 'Every event of a session, live; replays after Last-Event-ID (or ?last_event_id=)' })
  @ApiSuccess(200, 'An SSE stream: id (session sequence), event (type), data (the event)', {
    contentType: 'text/event-stream',
  })
  @ApiErrors(400, 404)
  async session(
    @Auth() principal: Principal,
    @Param('id', uuidParam('session_id')) id: string,
    @Query() q: StreamQuery,
    @Req() req: SseRequest,
    @Res() res: SseResponse,
  ): Promise<void> {
    const after = lastEventId(req, q);
    await this.queries.execute(new GetSessionQuery(principal, id));
    this.stream(req, res, { sessionId: id, runId: null, afterSequence: after, principal, endAfterReplay: false });
  }

  @Get('runs/:id/events')
  @RequireScope('runs.read')
  @ApiProduces('text/event-stream')
  @ApiHeader({ name: 'Last-Event-ID', required: false })
  @ApiOperation({ summary: "A run's events, live; ends after the run's terminal event" })
  @ApiSuccess(200, "An SSE stream of the run's events; ends after its terminal event", {
    contentType: 'text/event-stream',
  })
  @ApiErrors(400, 404)
  async run(
    @Auth() principal: Principal,
    @Param('id', uuidParam('run_id')) id: string,
    @Query() q: StreamQuery,
    @Req() req: SseRequest,
    @Res() res: SseResponse,
  ): Promise<void> {
    const after = lastEventId(req, q);
    const run = await this.queries.execute(new GetRunQuery(principal, id));
    this.stream(req, res, {
      sessionId: run.sessionId,
      runId: run.id,
      afterSequence: after,
      principal,
      endAfterReplay: isTerminal(run.status),
    });
  }

  private stream(
    req: SseRequest,
    res: SseResponse,
    target: {
      sessionId: string;
      runId: string | null;
      afterSequence: number;
      principal: Principal;
      endAfterReplay: boolean;
    },
  ): void {
    const sink = openSse(req, res);
    const stream = new EventStream(
      sink,
      this.store,
      this.hubs,
      { ...target, heartbeatMs: this.settings.sseHeartbeatMs, maxBufferedBytes: this.settings.sseMaxBufferedBytes },
      this.log,
    );
    void stream.run((onEnd) => req.on('close', onEnd));
  }
}
