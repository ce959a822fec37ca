import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { WEBHOOK_REGISTRY } from '../application/tokens';
import { NotFoundError } from '../domain/errors';
import type { Principal } from '../domain/principal';
import type { WebhookRecord, WebhookRegistry } from '../ports/notifications';
import { Auth, RequireScope } from './auth/decorators';
import { RegisterWebhookBody } from './dto/requests';
import { ApiErrors, ApiSuccess } from './openapi';
import { uuidParam } from './validation';

const present = (w: WebhookRecord) => ({ id: w.id, url: w.url, kinds: w.kinds, created_at: w.createdAt });

/**
 * The caller's webhook endpoints (issue 31 item 3, ADR 0036). Registering one is a write on one's
 * own notifications (`sessions.write`); the secret is in the 201 answer only.
 */
@ApiTags('notifications')
@Controller('v1/webhooks')
export class WebhooksController {
  constructor(@Inject(WEBHOOK_REGISTRY) private readonly webhooks: WebhookRegistry) {}

  @Post()
  @HttpCode(201)
  @RequireScope('sessions.write')
  @ApiOperation({ summary: 'Registers a webhook endpoint; the signing secret is shown once' })
  @ApiSuccess(201, '{id, secret, url, kinds, created_at}')
  @ApiErrors(400, 413, 415)
  async register(@Auth() principal: Principal, @Body() body: RegisterWebhookBody) {
    const w = await this.webhooks.register(principal, body.url, body.kinds);
    return { ...present(w), secret: w.secret };
  }

  @Get()
  @RequireScope('sessions.read')
  @ApiOperation({ summary: "The caller's webhook endpoints (without secrets)" })
  @ApiSuccess(200, '{items}')
  @ApiErrors()
  async list(@Auth() principal: Principal) {
    return { items: (await this.webhooks.list(principal)).map(present) };
  }

  @Get(':id')
  @RequireScope('sessions.read')
  @ApiOperation({ summary: 'One webhook endpoint of the caller (without its secret)' })
  @ApiSuccess(200, 'The endpoint')
  @ApiErrors(400, 404)
  async get(@Auth() principal: Principal, @Param('id', uuidParam('webhook_id')) id: string) {
    const w = await this.webhooks.get(principal, id);
    if (!w) throw new NotFoundError(`webhook ${id} does not exist`, { webhookId: id });
    return present(w);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequireScope('sessions.write')
  @ApiOperation({ summary: 'Removes a webhook endpoint and its pending deliveries' })
  @ApiSuccess(204, 'Removed')
  @ApiErrors(400, 404)
  async remove(@Auth() principal: Principal, @Param('id', uuidParam('webhook_id')) id: string): Promise<void> {
    if (!(await this.webhooks.remove(principal, id)))
      throw new NotFoundError(`webhook ${id} does not exist`, { webhookId: id });
  }
}
