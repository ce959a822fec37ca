import { ApiErrors, ApiSuccess } from './openapi';
import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { GetApprovalQuery, ListApprovalsQuery } from '../application/runs/queries';
import { APPROVAL_EDIT_CHECKS } from '../application/approvals/tokens';
import { NOTIFICATION_INBOX } from '../application/tokens';
import { InvalidStateTransition } from '../domain/errors';
import type { Principal } from '../domain/principal';
import type { ApprovalEditChecks } from '../ports/approval-edits';
import type { NotificationInbox } from '../ports/notifications';
import type { ApprovalRecord } from '../ports/read-models';
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
    @Inject(APPROVAL_EDIT_CHECKS) private readonly edits: ApprovalEditChecks,
  ) {}

  /** The approval with its tool's input schema (`arguments_schema`), which the console's edit form validates against. */
  private present = (a: ApprovalRecord) => {
    const tool = (a.request as { toolName?: unknown }).toolName;
    const schema = a.actionKind === 'tool_call' && typeof tool === 'string' ? this.edits.argumentsSchema(tool) : null;
    return { ...presentApproval(a), arguments_schema: schema };
  };

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
      this.present,
    );
  }

  @Get(':id')
  @RequireScope('approvals.read')
  @ApiOperation({ summary: 'One approval of the principal' })
  @ApiSuccess(200, 'The approval')
  @ApiErrors(400, 404)
  async get(@Auth() principal: Principal, @Param('id', uuidParam('approval_id')) id: string) {
    return this.present(await this.queries.execute(new GetApprovalQuery(principal, id)));
  }

  @Post(':id/resolve')
  @HttpCode(200)
  @RequireScope('approvals.resolve')
  @ApiOperation({
    summary:
      'Approve once, approve with edited arguments, or deny a pending approval (409 when it is already resolved; 400 naming the field when edited arguments fail the schema; 403 when policy would deny the edited call)',
  })
  @ApiSuccess(200, 'The resolved approval')
  @ApiErrors(400, 403, 404, 409, 413, 415)
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
    await resolveApproval(this.commands, principal, id, body.decision, body.reason ?? null, body.arguments);
    // Answered, wherever from (the inbox's inline action included): its notifications are read —
    // the run owner's, also when an approver (approvals.review) answered for them.
    await this.inbox.markSubjectRead({ ...principal, principalId: approval.principalId }, id);
    return this.present(await this.queries.execute(new GetApprovalQuery(principal, id)));
  }
}
