import { ApiErrors, ApiSuccess } from './openapi';
import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { GetApprovalQuery, ListApprovalsQuery } from '../application/runs/queries';
import { NOTIFICATION_INBOX } from '../application/tokens';
import { InvalidStateTransition } from '../domain/errors';
import type { Principal } from '../domain/principal';
import type { NotificationInbox } from '../ports/notifications';
import { Auth, RequireScope } from './auth/decorators';
import { resolveApproval } from './deferred-commands';
import { ApprovalListQuery, ResolveApprovalBody } from './dto/requests';
import { presentApproval, presentPage } from './presenters';
import { uuidParam } from './validation';

@ApiTags('approvals')
@Controller('v1/approvals')
export class ApprovalsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    @Inject(NOTIFICATION_INBOX) private readonly inbox: NotificationInbox,
  ) {}

  @Get()
  @RequireScope('approvals.read')
  @ApiOperation({
    summary:
      "The principal's approvals (every principal's of the tenant with approvals.review), newest first; status=pending|resolved filters",
  })
  @ApiSuccess(200, '{items, next_cursor}')
  @ApiErrors(400)
  async list(@Auth() principal: Principal, @Query() q: ApprovalListQuery) {
    return presentPage(
      await this.queries.execute(new ListApprovalsQuery(principal, q.status ?? null, q.limit ?? 50, q.cursor ?? null)),
      presentApproval,
    );
  }

  @Get(':id')
  @RequireScope('approvals.read')
  @ApiOperation({ summary: 'One approval of the principal' })
  @ApiSuccess(200, 'The approval')
  @ApiErrors(400, 404)
  async get(@Auth() principal: Principal, @Param('id', uuidParam('approval_id')) id: string) {
    return presentApproval(await this.queries.execute(new GetApprovalQuery(principal, id)));
  }

  @Post(':id/resolve')
  @HttpCode(200)
  @RequireScope('approvals.resolve')
  @ApiOperation({ summary: 'Approve once or deny a pending approval (409 when it is already resolved)' })
  @ApiSuccess(200, 'The resolved approval')
  @ApiErrors(400, 404, 409, 413, 415)
  async resolve(
    @Auth() principal: Principal,
    @Param('id', uuidParam('approval_id')) id: string,
    @Body() body: ResolveApprovalBody,
  ) {
    const approval = await this.queries.execute(new GetApprovalQuery(principal, id));
    if (approval.status !== 'pending') {
      throw new InvalidStateTransition(`approval ${id} is already ${approval.status}`, {
        approvalId: id,
        status: approval.status,
      });
    }
    await resolveApproval(this.commands, principal, id, body.decision, body.reason ?? null);
    // Answered, wherever from (the inbox's inline action included): its notifications are read —
    // the run owner's, also when an approver (approvals.review) answered for them.
    await this.inbox.markSubjectRead({ ...principal, principalId: approval.principalId }, id);
    return presentApproval(await this.queries.execute(new GetApprovalQuery(principal, id)));
  }
}
