import type { EventPayloads, EventType, NewEvent } from '../../domain/events/payloads';

/**
 * The worker's events, one function per event type: every event the run loop's steps and journal
 * append is spelled here, so moving their construction into the deciders (docs/adr/0024-deciders.md)
 * is a change of this one file.
 */
function worker<T extends EventType>(type: T, runId: string, data: EventPayloads[T]): NewEvent<T> {
  return { type, runId, actorType: 'worker', data };
}

type Data<T extends EventType> = EventPayloads[T];

export const runEvents = {
  released: (runId: string, data: Data<'run.released'>) => worker('run.released', runId, data),
  checkpointed: (runId: string, data: Data<'run.checkpointed'>) => worker('run.checkpointed', runId, data),
  completed: (runId: string, data: Data<'run.completed'>) => worker('run.completed', runId, data),
  failed: (runId: string, data: Data<'run.failed'>) => worker('run.failed', runId, data),
  cancelled: (runId: string, data: Data<'run.cancelled'>) => worker('run.cancelled', runId, data),
  waitingForApproval: (runId: string, data: Data<'run.waiting_for_approval'>) =>
    worker('run.waiting_for_approval', runId, data),
  waitingForUser: (runId: string, data: Data<'run.waiting_for_user'>) => worker('run.waiting_for_user', runId, data),
  assistantMessage: (runId: string, data: Data<'assistant.message.completed'>) =>
    worker('assistant.message.completed', runId, data),
};

export const modelEvents = {
  started: (runId: string, data: Data<'model.request.started'>) => worker('model.request.started', runId, data),
  failed: (runId: string, data: Data<'model.request.failed'>) => worker('model.request.failed', runId, data),
  responded: (runId: string, data: Data<'model.response.completed'>) => worker('model.response.completed', runId, data),
};

export const toolEvents = {
  proposed: (runId: string, data: Data<'tool.call.proposed'>) => worker('tool.call.proposed', runId, data),
  authorized: (runId: string, data: Data<'tool.call.authorized'>) => worker('tool.call.authorized', runId, data),
  denied: (runId: string, data: Data<'tool.call.denied'>) => worker('tool.call.denied', runId, data),
  started: (runId: string, data: Data<'tool.call.started'>) => worker('tool.call.started', runId, data),
  effectStarted: (runId: string, data: Data<'tool.call.effect_started'>) =>
    worker('tool.call.effect_started', runId, data),
  completed: (runId: string, data: Data<'tool.call.completed'>) => worker('tool.call.completed', runId, data),
  failed: (runId: string, data: Data<'tool.call.failed'>) => worker('tool.call.failed', runId, data),
  uncertain: (runId: string, data: Data<'tool.call.uncertain'>) => worker('tool.call.uncertain', runId, data),
  approvalRequested: (runId: string, data: Data<'approval.requested'>) => worker('approval.requested', runId, data),
};

/** An event a tool extension spelled (`eventsFor`, e.g. `run.skill.loaded`), as this run's worker's. */
export function asWorkerEvent(runId: string, e: NewEvent): NewEvent {
  return { ...e, runId, actorType: 'worker' };
}
