import { InvalidStateTransition } from '../errors';
import type { EventPayloads, EventType, NewEvent } from '../events/payloads';
import { accept, event, refuse, type Actor, type Decider, type Decision, type DecidedEvent } from './decider';

/** The statuses of plan §8.4, as the tool_invocations projection names them. */
export type ToolInvocationStatus =
  'proposed' | 'authorized' | 'waiting_for_approval' | 'running' | 'succeeded' | 'failed' | 'denied' | 'uncertain';

export interface ToolInvocationState {
  readonly invocationId: string | null;
  readonly status: ToolInvocationStatus | 'absent';
}

/** The state an invocation's read-model row stands for (the projection folds the same events). */
export function toolInvocationStateOf(invocationId: string, status: ToolInvocationStatus): ToolInvocationState {
  return { invocationId, status };
}

const TERMINAL: ReadonlySet<ToolInvocationState['status']> = new Set(['succeeded', 'failed', 'denied']);

interface ToolCommandBase {
  /** The run the invocation belongs to (null: a tool extension that does not know it; its caller stamps it). */
  readonly runId: string | null;
  readonly invocationId: string;
  readonly actor: Actor;
}

export interface ProposeToolCall extends ToolCommandBase {
  readonly kind: 'ProposeToolCall';
  readonly step: number;
  readonly callId: string;
  readonly toolName: string;
  readonly toolVersion: string | null;
  readonly arguments: Record<string, unknown>;
  readonly argumentsHash: string;
  readonly idempotencyKey: string;
  /** A call a `sandbox.run_program` program made through the tool bridge: its parent invocation. */
  readonly bridgedFrom?: string;
}

export interface AuthorizeToolCall extends ToolCommandBase {
  readonly kind: 'AuthorizeToolCall';
  readonly decision: string;
  readonly reasonCode: string;
  readonly policyVersion: string;
}

export interface DenyToolCall extends ToolCommandBase {
  readonly kind: 'DenyToolCall';
  readonly reasonCode: string;
  readonly explanation: string;
  readonly policyVersion: string;
}

export interface StartToolCall extends ToolCommandBase {
  readonly kind: 'StartToolCall';
}

/** The effect watermark, just before a non-idempotent tool starts its effect. */
export interface MarkEffectStarted extends ToolCommandBase {
  readonly kind: 'MarkEffectStarted';
}

/** A skill `skill.load` brought into the run (docs/skills.md). */
export type LoadedSkill = Omit<EventPayloads['run.skill.loaded'], 'invocationId'>;

export interface CompleteToolCall extends ToolCommandBase {
  readonly kind: 'CompleteToolCall';
  readonly result: Record<string, unknown>;
  readonly truncated: boolean;
  readonly latencyMs: number;
  readonly trust: EventPayloads['tool.call.completed']['trust'];
  /** `skill.load`'s result: the skill it loaded, recorded with the completion. */
  readonly loadedSkill?: LoadedSkill;
}

/** `run.skill.loaded` of an invocation that has completed (a tool extension's follow-up). */
export interface RecordSkillLoaded extends ToolCommandBase {
  readonly kind: 'RecordSkillLoaded';
  readonly skill: LoadedSkill;
}

export interface FailToolCall extends ToolCommandBase {
  readonly kind: 'FailToolCall';
  readonly errorCode: string;
  readonly message: string;
  readonly retryable: boolean;
  readonly latencyMs: number;
}

/** A non-idempotent call whose worker stopped past its effect watermark: nobody knows if it took effect. */
export interface MarkUncertain extends ToolCommandBase {
  readonly kind: 'MarkUncertain';
  readonly reason: string;
}

/**
 * A running program stops for a human: a call it made through the bridge waits for an approval.
 * Nothing of the program's own took effect (its workspace changes are written back only when it
 * ends), so the invocation stands authorized and starts again after the decision.
 */
export interface SuspendToolCall extends ToolCommandBase {
  readonly kind: 'SuspendToolCall';
  readonly reason: string;
  readonly awaitingInvocationId: string;
  readonly approvalId: string;
}

export type ToolInvocationCommand =
  | ProposeToolCall
  | AuthorizeToolCall
  | DenyToolCall
  | StartToolCall
  | MarkEffectStarted
  | CompleteToolCall
  | RecordSkillLoaded
  | FailToolCall
  | MarkUncertain
  | SuspendToolCall;

/**
 * Where each command may be issued from. Denial and failure are allowed from every open status:
 * policy is revalidated on every pass, and a call's arguments are re-checked before it runs, so
 * either can end a call at any point before its outcome (tool-pipeline steps 1–6).
 */
const FROM: Record<ToolInvocationCommand['kind'], readonly ToolInvocationState['status'][]> = {
  ProposeToolCall: ['absent'],
  AuthorizeToolCall: ['proposed', 'waiting_for_approval'],
  DenyToolCall: ['proposed', 'authorized', 'waiting_for_approval', 'running', 'uncertain'],
  // `running` again: a retry of a safe call an interrupted lease had started; `uncertain`: a human chose retry.
  StartToolCall: ['authorized', 'running', 'uncertain'],
  MarkEffectStarted: ['running'],
  CompleteToolCall: ['running'],
  RecordSkillLoaded: ['succeeded'],
  FailToolCall: ['proposed', 'authorized', 'waiting_for_approval', 'running', 'uncertain'],
  MarkUncertain: ['running'],
  SuspendToolCall: ['running'],
};

function emit<T extends EventType>(cmd: ToolCommandBase, type: T, data: EventPayloads[T]): NewEvent<T> {
  return event(type, data, { runId: cmd.runId, ...cmd.actor });
}

function eventsOf(cmd: ToolInvocationCommand): NewEvent[] {
  const { invocationId } = cmd;
  switch (cmd.kind) {
    case 'ProposeToolCall': {
      const { step, callId, toolName, toolVersion, argumentsHash, idempotencyKey } = cmd;
      return [
        emit(cmd, 'tool.call.proposed', {
          invocationId,
          step,
          callId,
          toolName,
          toolVersion,
          arguments: cmd.arguments,
          argumentsHash,
          idempotencyKey,
          ...(cmd.bridgedFrom ? { via: 'bridge' as const, parentInvocationId: cmd.bridgedFrom } : {}),
        }),
      ];
    }
    case 'AuthorizeToolCall': {
      const { decision, reasonCode, policyVersion } = cmd;
      return [emit(cmd, 'tool.call.authorized', { invocationId, decision, reasonCode, policyVersion })];
    }
    case 'DenyToolCall': {
      const { reasonCode, explanation, policyVersion } = cmd;
      return [emit(cmd, 'tool.call.denied', { invocationId, reasonCode, explanation, policyVersion })];
    }
    case 'StartToolCall':
      return [emit(cmd, 'tool.call.started', { invocationId })];
    case 'MarkEffectStarted':
      return [emit(cmd, 'tool.call.effect_started', { invocationId })];
    case 'CompleteToolCall': {
      const { result, truncated, latencyMs, trust } = cmd;
      return [
        emit(cmd, 'tool.call.completed', { invocationId, result, truncated, latencyMs, trust }),
        ...(cmd.loadedSkill ? [emit(cmd, 'run.skill.loaded', { invocationId, ...cmd.loadedSkill })] : []),
      ];
    }
    case 'RecordSkillLoaded':
      return [emit(cmd, 'run.skill.loaded', { invocationId, ...cmd.skill })];
    case 'FailToolCall': {
      const { errorCode, message, retryable, latencyMs } = cmd;
      return [emit(cmd, 'tool.call.failed', { invocationId, errorCode, message, retryable, latencyMs })];
    }
    case 'MarkUncertain':
      return [emit(cmd, 'tool.call.uncertain', { invocationId, reason: cmd.reason })];
    case 'SuspendToolCall': {
      const { reason, awaitingInvocationId, approvalId } = cmd;
      return [emit(cmd, 'tool.call.suspended', { invocationId, reason, awaitingInvocationId, approvalId })];
    }
  }
}

function decide(cmd: ToolInvocationCommand, state: ToolInvocationState): Decision {
  if (!FROM[cmd.kind].includes(state.status)) {
    const done = TERMINAL.has(state.status) ? ' (its outcome is recorded)' : '';
    return refuse(
      new InvalidStateTransition(`tool invocation ${cmd.invocationId} is ${state.status}${done}: cannot ${cmd.kind}`, {
        invocationId: cmd.invocationId,
        status: state.status,
      }),
    );
  }
  return accept(...eventsOf(cmd));
}

const STATUS_AFTER: Partial<Record<EventType, ToolInvocationStatus>> = {
  'tool.call.proposed': 'proposed',
  'tool.call.authorized': 'authorized',
  'tool.call.denied': 'denied',
  'tool.call.started': 'running',
  'tool.call.completed': 'succeeded',
  'tool.call.failed': 'failed',
  'tool.call.uncertain': 'uncertain',
  'tool.call.suspended': 'authorized',
};

function evolve(state: ToolInvocationState, e: DecidedEvent): ToolInvocationState {
  if (e.type === 'tool.call.proposed') return { invocationId: e.data.invocationId, status: 'proposed' };
  // A review of an UNCERTAIN invocation leaves it uncertain until the human decides.
  if (e.type === 'approval.requested') {
    return e.data.invocationId === state.invocationId && e.data.actionKind === 'tool_call' && state.status !== 'absent'
      ? { ...state, status: 'waiting_for_approval' }
      : state;
  }
  const status = STATUS_AFTER[e.type];
  if (!status || state.status === 'absent') return state;
  return (e.data as { invocationId?: string }).invocationId === state.invocationId ? { ...state, status } : state;
}

/** A tool invocation (plan §8.4): proposed, authorized or denied, started, and its one outcome. */
export const toolInvocationDecider: Decider<ToolInvocationCommand, ToolInvocationState> = {
  initialState: () => ({ invocationId: null, status: 'absent' }),
  evolve,
  decide,
};
