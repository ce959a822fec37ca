import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Principal } from '../../domain/principal';
import type { EventStore } from '../../ports/event-store';
import type { RunRepository } from '../../ports/run-store';
import type { SessionRepository } from '../../ports/session-repository';
import type { ToolRecordStore } from '../../ports/tool-records';
import { TOOL_RECORDS } from '../approvals/tokens';
import { EVENT_STORE, RUN_REPOSITORY, SESSION_REPOSITORY } from '../tokens';
import { cancelRun, type CancelDeps, type CancelResult } from './cancel';
import { CHILD_RUN_SERVICE, type ChildRunService } from './child-runs';

export type { CancelResult } from './cancel';

export class CancelRunCommand extends Command<CancelResult> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
    readonly reason: string | null = null,
  ) {
    super();
  }
}

/**
 * The API's and CLI's cancel (`cancelRun`); a parent's cancel then cancels every child still active
 * (plan §27.6, ADR 0037), each in its own session.
 */
@CommandHandler(CancelRunCommand)
export class CancelRunHandler implements ICommandHandler<CancelRunCommand> {
  private readonly deps: CancelDeps;
  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    @Inject(RUN_REPOSITORY) runs: RunRepository,
    @Inject(SESSION_REPOSITORY) sessions: SessionRepository,
    @Inject(TOOL_RECORDS) records: ToolRecordStore,
    @Inject(CHILD_RUN_SERVICE) private readonly children: ChildRunService,
  ) {
    this.deps = { store, runs, sessions, records };
  }

  async execute(cmd: CancelRunCommand): Promise<CancelResult> {
    const result = await cancelRun(this.deps, cmd.principal, cmd.runId, cmd.reason);
    if (result.outcome !== 'already_terminal') await this.children.cancelChildren(cmd.runId, cmd.principal);
    return result;
  }
}
