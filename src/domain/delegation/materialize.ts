import { eventsOrThrow, evolveAll, WORKER, type Actor } from '../deciders/decider';
import { sessionDecider } from '../deciders/session';
import type { NewEvent } from '../events/payloads';
import type { ChildPlan, DelegatingParent } from './plan';

/** One child session's first append: its `session.created`, the brief as its user message, its run queued. */
export interface ChildBatch {
  readonly sessionId: string;
  readonly runId: string;
  readonly tenantId: string;
  readonly events: readonly NewEvent[];
}

const TITLE_CHARS = 120;

/**
 * The dedicated child session of one brief (plan §27.6: a child run never enters its parent's
 * session): created by the worker for the parent's principal and agent, the brief as the one user
 * message, and the child run queued with its origin (`run.delegated`). Asked of the session and run
 * deciders; pure.
 */
export function childBatch(
  plan: ChildPlan,
  parent: DelegatingParent['run'],
  invocationId: string,
  parentTrace: { readonly traceId: string; readonly spanId: string } | null = null,
  actor: Actor = WORKER,
): ChildBatch {
  const objective = plan.brief.objective.replace(/\s+/g, ' ');
  const title = `Delegated: ${objective.length > TITLE_CHARS ? `${objective.slice(0, TITLE_CHARS - 1)}…` : objective}`;
  const created = eventsOrThrow(
    sessionDecider.decide(
      {
        kind: 'CreateSession',
        actor,
        agentId: plan.agent.id,
        agentVersion: plan.agent.version,
        principalId: parent.principalId,
        title,
        metadata: {
          delegated_by: {
            run_id: parent.id,
            session_id: parent.sessionId,
            invocation_id: invocationId,
            brief_index: plan.briefIndex,
          },
        },
      },
      sessionDecider.initialState(),
    ),
  );
  const submitted = eventsOrThrow(
    sessionDecider.decide(
      {
        kind: 'SubmitMessage',
        sessionId: plan.ids.sessionId,
        messageId: plan.ids.messageId,
        content: [{ type: 'text', text: plan.text }],
        run: {
          runId: plan.ids.runId,
          actor,
          agentId: plan.agent.id,
          agentVersion: plan.agent.version,
          principalId: parent.principalId,
          modelPolicy: plan.agent.modelPolicy,
          limits: plan.limits,
          priority: parent.priority,
          idempotencyKey: null,
          requestHash: null,
          // The parent run's recorded set (ADR 0032): a child never holds more than its origin.
          scopes: [...plan.scopes],
          delegation: {
            parentRunId: parent.id,
            parentSessionId: parent.sessionId,
            invocationId,
            briefIndex: plan.briefIndex,
            tools: [...plan.tools],
            scopes: [...plan.scopes],
            deadlineAt: plan.deadlineAt,
            parentTrace: parentTrace ? { traceId: parentTrace.traceId, spanId: parentTrace.spanId } : null,
          },
        },
      },
      evolveAll(sessionDecider, sessionDecider.initialState(), created),
    ),
  );
  return {
    sessionId: plan.ids.sessionId,
    runId: plan.ids.runId,
    tenantId: parent.tenantId,
    events: [...created, ...submitted],
  };
}
