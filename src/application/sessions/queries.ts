import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { NotFoundError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { SessionRecord } from '../../domain/session';
import type { ForkNode, Page, SessionMessage, SessionReadModel } from '../../ports/read-models';
import type { SessionRepository } from '../../ports/session-repository';
import { SESSION_READ_MODEL, SESSION_REPOSITORY } from '../tokens';

/**
 * The principal's sessions, newest activity first, one keyset page at a time; with `search`, only
 * those whose title or message text matches it (full-text).
 */
export class ListSessionsQuery extends Query<Page<SessionRecord>> {
  constructor(
    readonly principal: Principal,
    readonly limit: number,
    readonly cursor: string | null,
    readonly search: string | null = null,
  ) {
    super();
  }
}

@QueryHandler(ListSessionsQuery)
export class ListSessionsHandler implements IQueryHandler<ListSessionsQuery> {
  constructor(@Inject(SESSION_READ_MODEL) private readonly sessions: SessionReadModel) {}

  execute(q: ListSessionsQuery): Promise<Page<SessionRecord>> {
    return this.sessions.list(q.principal, q.limit, q.cursor, q.search);
  }
}

/** One live session of the principal; a deleted, foreign or missing session is not found. */
export class GetSessionQuery extends Query<SessionRecord> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
  ) {
    super();
  }
}

@QueryHandler(GetSessionQuery)
export class GetSessionHandler implements IQueryHandler<GetSessionQuery> {
  constructor(@Inject(SESSION_REPOSITORY) private readonly sessions: SessionRepository) {}

  async execute(q: GetSessionQuery): Promise<SessionRecord> {
    const s = await this.sessions.get(q.sessionId, q.principal);
    if (!s || s.status === 'deleted')
      throw new NotFoundError(`session ${q.sessionId} not found`, { sessionId: q.sessionId });
    return s;
  }
}

/** The durable transcript: user messages and completed assistant messages, oldest first. */
export class ListMessagesQuery extends Query<Page<SessionMessage>> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly limit: number,
    readonly cursor: string | null,
  ) {
    super();
  }
}

@QueryHandler(ListMessagesQuery)
export class ListMessagesHandler implements IQueryHandler<ListMessagesQuery> {
  constructor(@Inject(SESSION_READ_MODEL) private readonly sessions: SessionReadModel) {}

  async execute(q: ListMessagesQuery): Promise<Page<SessionMessage>> {
    const page = await this.sessions.messages(q.sessionId, q.principal, q.limit, q.cursor);
    if (!page) throw new NotFoundError(`session ${q.sessionId} not found`, { sessionId: q.sessionId });
    return page;
  }
}

/** The fork tree a session of the principal belongs to (issue 33), from its root. */
export class GetForkTreeQuery extends Query<ForkNode> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
  ) {
    super();
  }
}

@QueryHandler(GetForkTreeQuery)
export class GetForkTreeHandler implements IQueryHandler<GetForkTreeQuery> {
  constructor(@Inject(SESSION_READ_MODEL) private readonly sessions: SessionReadModel) {}

  async execute(q: GetForkTreeQuery): Promise<ForkNode> {
    const tree = await this.sessions.forkTree(q.sessionId, q.principal);
    if (!tree) throw new NotFoundError(`session ${q.sessionId} not found`, { sessionId: q.sessionId });
    return tree;
  }
}

/** Non-terminal runs of the principal's tenant (the per-tenant concurrent-run ceiling). */
export class CountActiveRunsQuery extends Query<number> {
  constructor(readonly principal: Principal) {
    super();
  }
}

@QueryHandler(CountActiveRunsQuery)
export class CountActiveRunsHandler implements IQueryHandler<CountActiveRunsQuery> {
  constructor(@Inject(SESSION_READ_MODEL) private readonly sessions: SessionReadModel) {}

  execute(q: CountActiveRunsQuery): Promise<number> {
    return this.sessions.activeRunCount(q.principal.tenantId);
  }
}

/** The run an earlier submission with this Idempotency-Key created, if any (submission routing, plan §27.7). */
export class FindSubmissionQuery extends Query<{ runId: string; sessionId: string } | null> {
  constructor(
    readonly principal: Principal,
    readonly idempotencyKey: string,
  ) {
    super();
  }
}

@QueryHandler(FindSubmissionQuery)
export class FindSubmissionHandler implements IQueryHandler<FindSubmissionQuery> {
  constructor(@Inject(SESSION_REPOSITORY) private readonly sessions: SessionRepository) {}

  async execute(q: FindSubmissionQuery): Promise<{ runId: string; sessionId: string } | null> {
    const prior = await this.sessions.idempotentSubmission(q.principal, q.idempotencyKey);
    return prior ? { runId: prior.runId, sessionId: prior.sessionId } : null;
  }
}
