import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { DEVICE_REGISTRY } from '../application/tokens';
import { NotFoundError } from '../domain/errors';
import type { Principal } from '../domain/principal';
import type { DeviceRecord, DeviceRegistry } from '../ports/devices';
import { Auth, RequireScope } from './auth/decorators';
import { RegisterDeviceBody } from './dto/requests';
import { ApiErrors, ApiSuccess } from './openapi';
import { uuidParam } from './validation';

const present = (d: DeviceRecord) => ({
  id: d.id,
  name: d.name,
  public_key: d.publicKey,
  key_type: d.keyType,
  fingerprint: d.fingerprint,
  created_at: d.createdAt,
});

/**
 * The caller's devices (issue 31 item 5, ADR 0036): the identities a later push transport delivers
 * to. Like webhooks, registering one is a write on one's own notifications (`sessions.write`).
 */
@ApiTags('notifications')
@Controller('v1/devices')
export class DevicesController {
  constructor(@Inject(DEVICE_REGISTRY) private readonly devices: DeviceRegistry) {}

  @Post()
  @HttpCode(201)
  @RequireScope('sessions.write')
  @ApiOperation({
    summary: 'Registers a device: a name and a public key (PEM or base64 SPKI; EC P-256/P-384, Ed25519)',
  })
  @ApiSuccess(201, '{id, name, public_key, key_type, fingerprint, created_at}')
  @ApiErrors(400, 409, 413, 415)
  async register(@Auth() principal: Principal, @Body() body: RegisterDeviceBody) {
    return present(await this.devices.register(principal, body.name, body.public_key));
  }

  @Get()
  @RequireScope('sessions.read')
  @ApiOperation({ summary: "The caller's devices" })
  @ApiSuccess(200, '{items}')
  @ApiErrors()
  async list(@Auth() principal: Principal) {
    return { items: (await this.devices.list(principal)).map(present) };
  }

  @Get(':id')
  @RequireScope('sessions.read')
  @ApiOperation({ summary: 'One device of the caller' })
  @ApiSuccess(200, 'The device')
  @ApiErrors(400, 404)
  async get(@Auth() principal: Principal, @Param('id', uuidParam('device_id')) id: string) {
    const d = await this.devices.get(principal, id);
    if (!d) throw new NotFoundError(`device ${id} does not exist`, { deviceId: id });
    return present(d);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequireScope('sessions.write')
  @ApiOperation({ summary: 'Removes a device' })
  @ApiSuccess(204, 'Removed')
  @ApiErrors(400, 404)
  async remove(@Auth() principal: Principal, @Param('id', uuidParam('device_id')) id: string): Promise<void> {
    if (!(await this.devices.remove(principal, id)))
      throw new NotFoundError(`device ${id} does not exist`, { deviceId: id });
  }
}
