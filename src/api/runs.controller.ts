import { ApiErrors, ApiSuccess } from './openapi';
import { Body, Controller, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CancelRunCommand } from '../application/runs/cancel-run';
import { GetRunQuery, ListRunChildrenQuery, ListRunEventsQuery } from '../application/runs/queries';
import { consensusDecider } from '../domain/deciders/consensus';
import { foldState } from '../domain/deciders/decider';
import { InvalidStateTransition } from '../domain/errors';
import type { Principal } from '../domain/principal';
import { Auth, RequireScope } from './auth/decorators';
import { deliverRunInput } from './deferred-commands';
import { CancelRunBody, MessageBody } from './dto/requests';
import { presentChildRun, presentRun } from './presenters';
import { uuidParam } from './validation';

interface StatusResponse {
  status(code: number): unknown;
}

@ApiTags('runs')
@Controller('v1/runs')
export class RunsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Get(':id')
  @RequireScope('runs.read')
  @ApiOperation({
    summary: 'Run status, step and call counts, usage by token class, cost, failure, final text, children, consensus',
  })
  @ApiSuccess(200, 'The run')
  @ApiErrors(400, 404)
  async get(@Auth() principal: Principal, @Param('id', uuidParam('run_id')) id: string) {
    const run = await this.queries.execute(new GetRunQuery(principal, id));
    const children = await this.queries.execute(new ListRunChildrenQuery(principal, id));
    // Consensus mode (ADR 0047): only a run with children can have rounds; folded from its events.
    const consensus =
      children.length > 0
        ? foldState(consensusDecider, await this.queries.execute(new ListRunEventsQuery(principal, id)))
        : null;
    return presentRun(run, children, consensus);
  }

  @Get(':id/children')
  @RequireScope('runs.read')
  @ApiOperation({ summary: "A run's child runs (delegate.run): session, status, usage, final text, artifacts" })
  @ApiSuccess(200, '{items: [{run_id, session_id, brief_index, status, usage, final_text, failure, artifacts}]}')
  @ApiErrors(400, 404)
  async children(@Auth() principal: Principal, @Param('id', uuidParam('run_id')) id: string) {
    const children = await this.queries.execute(new ListRunChildrenQuery(principal, id));
    return { items: children.map(presentChildRun) };
  }

  /** 200 when the run is cancelled now; 202 when a running run was asked to stop; 409 when it already ended. */
  @Post(':id/cancel')
  @RequireScope('runs.write')
  @ApiOperation({ summary: 'Cancel a run: 200 cancelled now, 202 cancellation requested, 409 already finished' })
  @ApiSuccess(200, 'Cancelled now (a queued or waiting run): {run_id, status, outcome}')
  @ApiSuccess(202, 'Cancellation requested (a running run; its worker stops at its next check)')
  @ApiErrors(400, 404, 409, 413, 415)
  async cancel(
    @Auth() principal: Principal,
    @Param('id', uuidParam('run_id')) id: string,
    @Body() body: CancelRunBody,
    @Res({ passthrough: true }) res: StatusResponse,
  ) {
    const r = await this.commands.execute(new CancelRunCommand(principal, id, body.reason ?? null));
    if (r.outcome === 'already_terminal') {
      throw new InvalidStateTransition(`run ${id} already ended (${r.status}); there is nothing to cancel`, {
        runId: id,
        status: r.status,
      });
    }
    res.status(r.outcome === 'cancelled' ? 200 : 202);
    return { run_id: r.runId, status: r.status, outcome: r.outcome };
  }

  @Post(':id/input')
  @HttpCode(202)
  @RequireScope('runs.write')
  @ApiOperation({ summary: 'Answer a run that is waiting for the user (resumes the same run)' })
  @ApiSuccess(202, '{run_id, status, outcome}: the answer is delivered and the run resumes')
  @ApiErrors(400, 404, 409, 413, 415)
  async input(@Auth() principal: Principal, @Param('id', uuidParam('run_id')) id: string, @Body() body: MessageBody) {
    const run = await this.queries.execute(new GetRunQuery(principal, id));
    if (run.status !== 'waiting_for_user')
      throw new InvalidStateTransition('run is not waiting for input', { runId: id, status: run.status });
    const delivered = await deliverRunInput(this.commands, principal, id, body.content.map((p) => p.text).join('\n\n'));
    return { run_id: id, status: delivered.status, outcome: delivered.outcome };
  }
}
