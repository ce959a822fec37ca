import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { runStateOf } from '../../domain/deciders/run';
import { askedQuestion, decideInput, questionsOf, type RunInputState } from '../../domain/deciders/run-input';
import { toolInvocationStateOf, type ToolInvocationStatus } from '../../domain/deciders/tool-invocation';
import { ConflictError, NotFoundError, ValidationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { EventStore } from '../../ports/event-store';
import type { RunRepository } from '../../ports/run-store';
import type { SessionRepository } from '../../ports/session-repository';
import type { ToolRecordStore } from '../../ports/tool-records';
import { TOOL_RECORDS } from '../approvals/tokens';
import { handleCommand, type LoadedState } from '../command-handler';
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

/**
 * Delivers the answer as the result of the question's invocation (labelled `user`) and re-queues the
 * same run in one append conditional on the session sequence, so two concurrent answers cannot
 * both resume it (domain/deciders/run-input.ts decides). Refuses input for a run that is not waiting
 * for the user (ConflictError).
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
    const { principal, runId, questionId } = cmd;
    return handleCommand(this.store, {
      load: () => this.load(cmd),
      decide: (state) =>
        decideInput(
          { kind: 'ProvideInput', runId, principalId: principal.principalId, text: cmd.text, questionId },
          state,
        ),
      result: ({ state }, appended) => ({
        runId,
        // The decider refused unless a question was asked.
        questionId: askedQuestion(state.questions, questionId)!.questionId,
        outcome: appended.length > 0 ? 'resumed' : 'already_provided',
      }),
      exhausted: () => new ConflictError(`run ${runId} kept changing while input was delivered; try again`, { runId }),
    });
  }

  private async load(cmd: ProvideRunInputCommand): Promise<LoadedState<RunInputState>> {
    const { principal, runId } = cmd;
    const notFound = () => new NotFoundError(`run ${runId} not found`, { runId });
    const located = await this.runs.get(runId, principal);
    if (!located) throw notFound();
    // The sequence is read before the state it guards (see handleCommand).
    const session = await this.sessions.get(located.sessionId, principal);
    if (!session) throw notFound();
    const run = await this.runs.get(runId, principal);
    if (!run) throw notFound();
    const questions = questionsOf(await this.store.listRunEvents(run.id, principal));
    const asked = askedQuestion(questions, cmd.questionId);
    // The question's invocation (its choices) matters only to an answer that may be recorded.
    const inv =
      asked && asked.answer === null && run.status === 'waiting_for_user'
        ? await this.records.invocation(asked.questionId, principal.tenantId)
        : null;
    return {
      sessionId: run.sessionId,
      tenantId: principal.tenantId,
      state: {
        run: runStateOf(run),
        questions,
        invocation: inv ? toolInvocationStateOf(inv.id, inv.status as ToolInvocationStatus) : null,
        choices:
          inv?.arguments.expected === 'choice' && Array.isArray(inv.arguments.choices)
            ? (inv.arguments.choices as unknown[])
            : null,
      },
      expectedSequence: session.lastSequence,
    };
  }
}
