import { Body, Controller, Get, Headers, HttpCode, Inject, Param, Post, Put, Query, Req, Res } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { NotificationProducer } from '../application/notifications/notification-producer';
import { NOTIFICATION_INBOX, NOTIFICATION_PREFERENCES, NOTIFICATION_PRODUCER } from '../application/tokens';
import { NotFoundError, ValidationError } from '../domain/errors';
import type { Principal } from '../domain/principal';
import type { Logger } from '../ports/logger';
import type { NotificationPreferences } from '../domain/notifications/preferences';
import type { NotificationInbox, NotificationPreferenceStore, StreamPosition } from '../ports/notifications';
import { API_SETTINGS, NOTIFICATION_HUBS, type ApiSettings } from './api-tokens';
import { Auth, RequireScope } from './auth/decorators';
import { NotificationPreferencesBody, NotificationStreamQuery, PageQuery, PostNotificationBody } from './dto/requests';
import { API_LOGGER } from './events.controller';
import { ApiErrors, ApiSuccess } from './openapi';
import { presentNotification, presentPage } from './presenters';
import { NotificationStream, type NotificationHubs } from './sse/notification-stream';
import { openSse, type SseRequest, type SseResponse } from './sse/sse-response';
import { uuidParam } from './validation';

const presentPreferences = (p: NotificationPreferences) => ({
  kinds: p.kinds,
  content: p.content,
  quiet_hours: p.quietHours,
});

/** Last-Event-ID (header, or `?last_event_id=`) of the notification stream: `<transaction>-<position>`. */
function streamPosition(req: SseRequest, q: NotificationStreamQuery): StreamPosition | null {
  const header = req.headers['last-event-id'];
  const raw = typeof header === 'string' && header.trim() !== '' ? header.trim() : q.last_event_id;
  if (raw === undefined) return null;
  const m = /^(\d{1,20})-(\d{1,19})$/.exec(raw);
  if (!m || BigInt(m[1]) > 2n ** 64n - 1n || BigInt(m[2]) > 2n ** 63n - 1n)
    throw new ValidationError('Last-Event-ID must be a notification stream id (<transaction>-<position>)', {
      field: 'last_event_id',
    });
  return { transactionId: m[1], position: m[2] };
}

/**
 * The inbox (issue 31 item 2, ADR 0036). Reading one's notifications is reading about one's own
 * sessions (`sessions.read`); marking them read changes only one's own inbox (`sessions.write`).
 * Another principal's or tenant's notification is not found.
 */
@ApiTags('notifications')
@Controller('v1/notifications')
export class NotificationsController {
  constructor(
    @Inject(NOTIFICATION_INBOX) private readonly inbox: NotificationInbox,
    @Inject(NOTIFICATION_PREFERENCES) private readonly preferences: NotificationPreferenceStore,
    @Inject(NOTIFICATION_HUBS) private readonly hubs: NotificationHubs,
    @Inject(NOTIFICATION_PRODUCER) private readonly producer: NotificationProducer,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    @Inject(API_LOGGER) private readonly log: Logger,
  ) {}

  @Get()
  @RequireScope('sessions.read')
  @ApiOperation({ summary: "The principal's notifications, unread first, then newest first" })
  @ApiSuccess(200, '{items, next_cursor}')
  @ApiErrors(400)
  async list(@Auth() principal: Principal, @Query() q: PageQuery) {
    return presentPage(await this.inbox.list(principal, q.limit ?? 50, q.cursor ?? null), presentNotification);
  }

  @Post()
  @RequireScope('admin')
  @ApiHeader({
    name: 'Idempotency-Key',
    required: true,
    description: 'Required. Same key and body: the original notification (200); same key, other body: 409',
  })
  @ApiOperation({
    summary: "An external producer's notification to a principal of the caller's tenant (idempotent by key)",
  })
  @ApiSuccess(201, 'The notification, as the recipient’s inbox shows it, with its recipient')
  @ApiSuccess(200, 'The same key and body again: the original notification')
  @ApiErrors(400, 409, 413, 415)
  async post(
    @Auth() principal: Principal,
    @Body() body: PostNotificationBody,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) res: { status(code: number): unknown },
  ) {
    const r = await this.producer.post(principal, idempotencyKey ?? null, {
      principalId: body.recipient,
      kind: body.kind,
      summary: body.summary as Record<string, string>,
      links: (body.links ?? {}) as Record<string, string>,
    });
    res.status(r.created ? 201 : 200);
    return { ...presentNotification(r.notification), recipient: r.notification.principalId };
  }

  @Get('summary')
  @RequireScope('sessions.read')
  @ApiOperation({ summary: 'Unread and total counts of the principal’s notifications, by kind' })
  @ApiSuccess(200, '{unread, by_kind, last_event_id}')
  @ApiErrors()
  async summary(@Auth() principal: Principal) {
    const s = await this.inbox.summary(principal);
    return { unread: s.unread, by_kind: s.byKind, last_event_id: s.streamId };
  }

  @Get('preferences')
  @RequireScope('sessions.read')
  @ApiOperation({ summary: "The caller's notification preferences: per kind channel, content, quiet hours" })
  @ApiSuccess(200, '{kinds, content, quiet_hours}')
  @ApiErrors()
  async getPreferences(@Auth() principal: Principal) {
    return presentPreferences(await this.preferences.get(principal));
  }

  @Put('preferences')
  @RequireScope('sessions.write')
  @ApiOperation({
    summary: "Replaces the caller's notification preferences (kinds left out: both; content: none; no quiet hours)",
  })
  @ApiSuccess(200, '{kinds, content, quiet_hours}')
  @ApiErrors(400, 413, 415)
  async putPreferences(@Auth() principal: Principal, @Body() body: NotificationPreferencesBody) {
    return presentPreferences(await this.preferences.put(principal, { ...body }));
  }

  @Get('events')
  @RequireScope('sessions.read')
  @ApiProduces('text/event-stream')
  @ApiHeader({ name: 'Last-Event-ID', required: false })
  @ApiOperation({
    summary:
      "The principal's new notifications, live; replays after Last-Event-ID (or ?last_event_id=; the summary's last_event_id skips the past)",
  })
  @ApiSuccess(200, 'An SSE stream: id (<transaction>-<position>), event `notification`, data (the notification)', {
    contentType: 'text/event-stream',
  })
  @ApiErrors(400)
  events(
    @Auth() principal: Principal,
    @Query() q: NotificationStreamQuery,
    @Req() req: SseRequest,
    @Res() res: SseResponse,
  ): void {
    const after = streamPosition(req, q);
    const stream = new NotificationStream(
      openSse(req, res),
      this.inbox,
      this.hubs,
      {
        principal,
        after,
        heartbeatMs: this.settings.sseHeartbeatMs,
        maxBufferedBytes: this.settings.sseMaxBufferedBytes,
      },
      this.log,
    );
    void stream.run((onEnd) => req.on('close', onEnd));
  }

  @Post('read-all')
  @HttpCode(200)
  @RequireScope('sessions.write')
  @ApiOperation({ summary: 'Marks every unread notification of the principal read' })
  @ApiSuccess(200, '{marked}')
  @ApiErrors()
  async readAll(@Auth() principal: Principal) {
    return { marked: await this.inbox.markAllRead(principal) };
  }

  @Post(':id/read')
  @HttpCode(200)
  @RequireScope('sessions.write')
  @ApiOperation({ summary: 'Marks one notification read (idempotent)' })
  @ApiSuccess(200, 'The notification')
  @ApiErrors(400, 404)
  async read(@Auth() principal: Principal, @Param('id', uuidParam('notification_id')) id: string) {
    const n = await this.inbox.markRead(principal, id);
    if (!n) throw new NotFoundError(`notification ${id} does not exist`, { notificationId: id });
    return presentNotification(n);
  }
}
