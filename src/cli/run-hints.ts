import type { EventPayloads } from '../domain/events/payloads';

/**
 * What to type next when the run waits for a person: approve or deny a tool call, or — for an
 * invocation left UNCERTAIN by a crash — review it with `agent run review` (the command that says
 * what approving means there: run the effect again).
 */
export function approvalHint(a: EventPayloads['approval.requested']): string {
  if (a.actionKind === 'uncertain_review' && a.invocationId !== null)
    return `  waiting for a review of UNCERTAIN ${a.toolName} ${a.invocationId}: ${a.actionSummary}\n    agent run review ${a.invocationId} --retry|--fail\n`;
  return `  waiting for approval ${a.approvalId}: ${a.actionSummary}\n    agent approval approve ${a.approvalId}   |   agent approval deny ${a.approvalId} --reason "..."\n`;
}

/** The question a run waits on, and the command that answers it. */
export function questionHint(runId: string, q: EventPayloads['run.waiting_for_user']): string {
  return `  question: ${q.question}\n    agent run input ${runId} "<answer>"\n`;
}
