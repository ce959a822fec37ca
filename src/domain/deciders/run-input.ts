import { ConflictError, NotFoundError, ValidationError } from '../errors';
import type { StoredEvent } from '../events/payloads';
import { accept, combine, refuse, type Decision } from './decider';
import { runDecider, type RunState } from './run';
import { toolInvocationDecider, type ToolInvocationState } from './tool-invocation';

/** One `conversation.ask_user` question of a run (its id is the invocation's) and the answer it got. */
export interface Question {
  readonly questionId: string;
  readonly answer: string | null;
}

/** The run's questions in order, with the answer each got (the ask_user invocation's result). */
export function questionsOf(events: readonly StoredEvent[]): Question[] {
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

/** The question an answer is meant for: the one named, else the latest. */
export function askedQuestion(questions: readonly Question[], questionId: string | null): Question | undefined {
  return questionId ? questions.filter((q) => q.questionId === questionId).at(-1) : questions.at(-1);
}

export interface RunInputState {
  readonly run: RunState;
  readonly questions: readonly Question[];
  /** The asked question's invocation, and the choices it offered (null: free text). */
  readonly invocation: ToolInvocationState | null;
  readonly choices: readonly unknown[] | null;
}

/** The answer to a run's outstanding question (plan §27.3, `POST /v1/runs/{id}/input`). */
export interface ProvideInput {
  readonly kind: 'ProvideInput';
  readonly runId: string;
  readonly principalId: string;
  readonly text: string;
  readonly questionId: string | null;
}

/**
 * Delivers the answer as the result of the question's invocation (labelled `user`) and re-queues
 * the same run. Idempotent on (run, question): the same answer again decides nothing; a different
 * one is a ConflictError, as is input for a run not waiting for the user.
 */
export function decideInput(cmd: ProvideInput, state: RunInputState): Decision {
  const { runId } = cmd;
  const asked = askedQuestion(state.questions, cmd.questionId);
  if (cmd.questionId && !asked)
    return refuse(
      new NotFoundError(`run ${runId} asked no question ${cmd.questionId}`, { runId, questionId: cmd.questionId }),
    );
  if (asked && asked.answer !== null) {
    if (asked.answer === cmd.text) return accept();
    return refuse(
      new ConflictError(`question ${asked.questionId} of run ${runId} was already answered`, {
        runId,
        questionId: asked.questionId,
      }),
    );
  }
  if (state.run.status !== 'waiting_for_user' || !asked) {
    return refuse(
      new ConflictError(`run ${runId} is ${state.run.status}, not waiting for user input`, {
        runId,
        status: state.run.status,
      }),
    );
  }
  const choices = state.choices;
  if (choices && choices.length > 0 && !choices.includes(cmd.text))
    return refuse(
      new ValidationError(`the answer must be one of: ${choices.map(String).join(', ')}`, { field: 'text' }),
    );
  const actor = { actorType: 'user' as const, actorId: cmd.principalId };
  return combine(
    toolInvocationDecider.decide(
      {
        kind: 'CompleteToolCall',
        runId,
        invocationId: asked.questionId,
        actor,
        result: { answer: cmd.text, question_id: asked.questionId },
        truncated: false,
        latencyMs: 0,
        trust: 'user',
      },
      // The question's invocation was started before the run waited (tool-pipeline askUser).
      state.invocation ?? { invocationId: asked.questionId, status: 'running' },
    ),
    runDecider.decide({ kind: 'ResumeRun', runId, actor, awaiting: 'user', reason: 'user_input' }, state.run),
  );
}
