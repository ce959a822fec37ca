import { ApiOperation } from '@nestjs/swagger';
import { ApiErrors, ApiSuccess } from './openapi';
import { Controller, Get, HttpException, Inject } from '@nestjs/common';
import { Public } from './auth/decorators';
import { HEALTH_PROBE, type HealthProbe } from './health-probe';

/** Liveness and readiness. Readiness checks the database and migrations, never a model provider. */
@Public()
@Controller('health')
export class HealthController {
  constructor(@Inject(HEALTH_PROBE) private readonly probe: HealthProbe) {}

  @Get('live')
  @ApiOperation({ summary: 'Liveness: the process answers' })
  @ApiSuccess(200, '{status: ok}')
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  @ApiOperation({ summary: 'Readiness: the database is up and migrated (never a model provider); the sandbox state' })
  @ApiSuccess(200, '{status: ready, database, migrations, sandbox, …}')
  @ApiErrors(503)
  async ready(): Promise<Record<string, unknown>> {
    const r = await this.probe.check();
    if (!r.ok) throw new HttpException({ error: { code: 'not_ready', message: r.reason, details: r } }, 503);
    return { status: 'ready', ...r };
  }
}
