import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { ConcurrencyConflict, ConflictError, NotFoundError, ValidationError } from '../../domain/errors';
import type { StoredEvent } from '../../domain/events/payloads';
import type { Principal } from '../../domain/principal';
import type { EventStore } from '../../ports/event-store';
import type { RunRepository } from '../../ports/run-store';
import type { SessionRepository } from '../../ports/session-repository';
import type { ToolRecordStore } from '../../ports/tool-records';
import { TOOL_RECORDS } from '../approvals/tokens';
import { EVENT_STORE, RUN_REPOSITORY, SESSION_REPOSITORY } from '../tokens';

export interface ProvidedInput {
  readonly runId: string;
  readonly questionId: string;
  /** `resumed`: the answer was recorded and the run re-queued; `already_provided`: a repeat, nothing written. */
  readonly outcome: 'resumed' | 'already_provided';
}

/**
 * The answer to a run's outstanding `conversation.ask_user` question (plan §27.3). Idempotent on
 * (run, question id): repeating the same answer is a no-op. `questionId` is optional; without it the
 * outstanding question is meant.
 */
export class ProvideRunInputCommand extends Command<ProvidedInput> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
    readonly text: string,
    readonly questionId: string | null = null,
  ) {
    super();
  }
}

const MAX_INPUT_CHARS = 32_000;

interface Question {
  readonly questionId: string;
  readonly answer: string | null;
}

/** The run's questions in order, with the answer each got (the ask_user invocation's result). */
function questionsOf(events: readonly StoredEvent[]): Question[] {
  const answers = new Map<string, string>();
  for (const e of events) {
    if (e.type === 'tool.call.completed' && typeof e.data.result.answer === 'string')
      answers.set(e.data.invocationId, e.data.result.answer);
  }
  return events.flatMap((e) =>
    e.type === 'run.waiting_for_user'
      ? [{ questionId: e.data.questionId, answer: answers.get(e.data.questionId) ?? null }]
      : [],
  );
}

/**
 * Delivers the answer as the result of the question's invocation (labelled `user`) and re-queues the
 * same run in one append conditional on the session sequence, so two concurrent answers cannot
 * both resume it. Refuses input for a run that is not waiting for the user (ConflictError).
 */
@CommandHandler(ProvideRunInputCommand)
export class ProvideRunInputHandler implements ICommandHandler<ProvideRunInputCommand> {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(RUN_REPOSITORY) private readonly runs: RunRepository,
    @Inject(SESSION_REPOSITORY) private readonly sessions: SessionRepository,
    @Inject(TOOL_RECORDS) private readonly records: ToolRecordStore,
  ) {}

  async execute(cmd: ProvideRunInputCommand): Promise<ProvidedInput> {
    if (typeof cmd.text !== 'string' || cmd.text.trim() === '')
      throw new ValidationError('input text must not be empty', { field: 'text' });
    if (cmd.text.length > MAX_INPUT_CHARS)
      throw new ValidationError(`input text is longer than ${MAX_INPUT_CHARS} characters`, { field: 'text' });
    for (let attempt = 0; attempt < 10; attempt++) {
      const located = await this.runs.get(cmd.runId, cmd.principal);
      if (!located) throw new NotFoundError(`run ${cmd.runId} not found`, { runId: cmd.runId });
      // The sequence is read before the state it guards (see ApprovalService.withRetries).
      const session = await this.sessions.get(located.sessionId, cmd.principal);
      if (!session) throw new NotFoundError(`run ${cmd.runId} not found`, { runId: cmd.runId });
      const run = await this.runs.get(cmd.runId, cmd.principal);
      if (!run) throw new NotFoundError(`run ${cmd.runId} not found`, { runId: cmd.runId });
      const questions = questionsOf(await this.store.listRunEvents(run.id, cmd.principal));
      const asked = cmd.questionId ? questions.filter((q) => q.questionId === cmd.questionId).at(-1) : questions.at(-1);
      if (cmd.questionId && !asked)
        throw new NotFoundError(`run ${run.id} asked no question ${cmd.questionId}`, {
          runId: run.id,
          questionId: cmd.questionId,
        });
      if (asked && asked.answer !== null) {
        if (asked.answer === cmd.text)
          return { runId: run.id, questionId: asked.questionId, outcome: 'already_provided' };
        throw new ConflictError(`question ${asked.questionId} of run ${run.id} was already answered`, {
          runId: run.id,
          questionId: asked.questionId,
        });
      }
      if (run.status !== 'waiting_for_user' || !asked) {
        throw new ConflictError(`run ${run.id} is ${run.status}, not waiting for user input`, {
          runId: run.id,
          status: run.status,
        });
      }
      const inv = await this.records.invocation(asked.questionId, cmd.principal.tenantId);
      const choices =
        inv?.arguments.expected === 'choice' && Array.isArray(inv.arguments.choices)
          ? (inv.arguments.choices as unknown[])
          : null;
      if (choices && choices.length > 0 && !choices.includes(cmd.text)) {
        throw new ValidationError(`the answer must be one of: ${choices.map(String).join(', ')}`, { field: 'text' });
      }
      const actor = { runId: run.id, actorType: 'user' as const, actorId: cmd.principal.principalId };
      try {
        await this.store.append(
          run.sessionId,
          [
            {
              ...actor,
              type: 'tool.call.completed',
              data: {
                invocationId: asked.questionId,
                result: { answer: cmd.text, question_id: asked.questionId },
                truncated: false,
                latencyMs: 0,
                trust: 'user',
              },
            },
            { ...actor, type: 'run.resumed', data: { reason: 'user_input' } },
          ],
          { tenantId: cmd.principal.tenantId, expectedSequence: session.lastSequence },
        );
        return { runId: run.id, questionId: asked.questionId, outcome: 'resumed' };
      } catch (e) {
        if (!(e instanceof ConcurrencyConflict)) throw e;
      }
    }
    throw new ConflictError(`run ${cmd.runId} kept changing while input was delivered; try again`, {
      runId: cmd.runId,
    });
  }
}
