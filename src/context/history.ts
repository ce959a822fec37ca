import type { ConversationItem, ToolCallItem, ToolResultItem } from '../domain/conversation/items';
import { canonicalValue } from './canonical-value';
import { textOf } from '../domain/conversation/items';
import { EMPTY_WORKING_STATE, type WorkingState } from '../domain/context/working-state';
import { ContextBuildError } from '../domain/errors';
import { isKnownEventType } from '../domain/events/catalog';
import type { EventPayloads, StoredEvent } from '../domain/events/payloads';
import type { TokenEstimator } from '../ports/token-estimator';
import { parseWorkingState, PLAN_UPDATE_TOOL } from './working-state';

/** Per-item framing overhead (role markers, separators) added to every counted item. */
export const ITEM_OVERHEAD_TOKENS = 4;

/**
 * One atomic piece of history: a user message, an assistant answer, or one model step's tool
 * calls together with their results (plan §27.4: a call never travels without its result).
 */
export interface HistoryUnit {
  readonly kind: 'user' | 'assistant' | 'tool_turn';
  readonly runId: string | null;
  /** Session sequence of the unit's first event (its position). */
  readonly sequence: number;
  /** For a user message: its message id. */
  readonly messageId: string | null;
  /** Every session sequence the unit was built from (provenance for compaction). */
  readonly sources: number[];
  readonly text: string;
  /** Tool turn only: calls with their (eventual) result, in proposal order. */
  readonly calls: ToolPair[];
  /** Cached token count and the estimator it was counted with. */
  tokens: number;
  countedBy: string | null;
  /**
   * A tool turn of a run a newer message interrupted (issue 33): its calls and results (synthetic
   * ones for the calls it left open) are part of the history later runs start with.
   */
  carried?: boolean;
  /**
   * Work of a run a newer message rolled back (`run.rolled_back`, issue 33): kept in the log, never
   * in a later run's context. The run's user message is not hidden.
   */
  hidden?: boolean;
}

export interface ToolPair {
  readonly call: ToolCallItem;
  readonly callSequence: number;
  result: ToolResultItem | null;
  resultSequence: number | null;
  /** The §11.2 trust label of the result event (`external_untrusted` output is elided in summaries). */
  resultTrust: string | null;
  /** The arguments a human approved in place of the model's (approve with edits, ADR 0044). */
  editedArguments?: Record<string, unknown>;
}

/** What the model is told with the result of a call a human edited (it proposed other arguments). */
export const HUMAN_EDIT_NOTE =
  'A human reviewer edited the arguments of this call before approving it; it ran with edited_arguments, and the result is of the edited call.';

/** The latest compaction checkpoint seen in the session log. */
export interface CompactionCheckpoint {
  readonly sequence: number;
  readonly data: EventPayloads['context.compacted'];
}

/**
 * The session-history projection the context engine reads (plan §27.4), folded incrementally:
 * `apply` takes only events after `lastSequence`, so each build reads what was appended since the
 * previous one - never the whole log again. Provider-opaque reasoning is not in the log, so it
 * cannot cross a run boundary through here.
 */
export class SessionHistory {
  lastSequence = 0;
  readonly units: HistoryUnit[] = [];
  compaction: CompactionCheckpoint | null = null;
  /** The latest working state written by `plan.update` (after the latest compaction's, if newer). */
  planState: { readonly sequence: number; readonly state: WorkingState } | null = null;
  /** The session's frozen memory snapshot (`memory.retrieved`, purpose `snapshot`; ADR 0035). */
  memorySnapshot: { readonly sequence: number; readonly retrievalId: string; readonly text: string } | null = null;
  /** The Region A hash of the latest model request in the session and its epoch number. */
  lastPrefixHash: string | null = null;
  prefixEpoch = 0;
  private readonly turns = new Map<string, HistoryUnit>();
  private readonly calls = new Map<string, { unit: HistoryUnit; pair: ToolPair }>();

  /**
   * An independent copy of this fold (units, open tool turns and all), for folding events that are
   * not committed yet into one build without touching the fold the engine keeps.
   */
  fork(): SessionHistory {
    const copy = new SessionHistory();
    // One structuredClone of every field keeps the references between them (a tool turn in `units`
    // is the same object as in `turns` and `calls`), so the copy folds on exactly like the original.
    const state = structuredClone({
      lastSequence: this.lastSequence,
      units: this.units,
      compaction: this.compaction,
      planState: this.planState,
      memorySnapshot: this.memorySnapshot,
      lastPrefixHash: this.lastPrefixHash,
      prefixEpoch: this.prefixEpoch,
      turns: this.turns,
      calls: this.calls,
    });
    copy.lastSequence = state.lastSequence;
    copy.units.push(...state.units);
    copy.compaction = state.compaction;
    copy.planState = state.planState;
    copy.memorySnapshot = state.memorySnapshot;
    copy.lastPrefixHash = state.lastPrefixHash;
    copy.prefixEpoch = state.prefixEpoch;
    for (const [k, v] of state.turns) copy.turns.set(k, v);
    for (const [k, v] of state.calls) copy.calls.set(k, v);
    return copy;
  }

  /**
   * Starts a fold from a run checkpoint's compaction reference instead of from the session's first
   * event: the events up to `afterSequence` are summarised by the compaction that follows them.
   */
  restore(afterSequence: number, workingState: WorkingState): void {
    this.lastSequence = afterSequence;
    this.planState = { sequence: afterSequence, state: workingState };
  }

  apply(events: readonly StoredEvent[]): void {
    for (const e of events) {
      if (e.sequence <= this.lastSequence) continue;
      // The payload in its canonical form: the fold is the same whoever handed the event over.
      this.applyOne({ ...e, data: canonicalValue(e.data) } as StoredEvent);
      this.lastSequence = e.sequence;
    }
  }

  private applyOne(e: StoredEvent): void {
    if (!isKnownEventType(e.type)) {
      throw new ContextBuildError(`event ${e.id} (sequence ${e.sequence}) has unknown type "${String(e.type)}"`, {
        eventId: e.id,
        sequence: e.sequence,
      });
    }
    const bad = (why: string) => corrupt(e, why);
    const data = e.data as unknown;
    if (data === null || typeof data !== 'object') bad('payload is not an object');
    switch (e.type) {
      case 'user.message.created':
      case 'assistant.message.completed':
        this.units.push(messageUnit(e));
        break;
      case 'tool.call.proposed':
        if (typeof e.data.callId !== 'string' || typeof e.data.toolName !== 'string') bad('callId/toolName missing');
        this.proposed(e);
        break;
      case 'tool.call.completed':
      case 'tool.call.failed':
      case 'tool.call.denied':
        this.answered(e);
        break;
      case 'context.compacted':
        if (!Array.isArray(e.data.sourceSequences)) bad('sourceSequences is not a list');
        this.compaction = { sequence: e.sequence, data: e.data };
        break;
      case 'model.request.started':
        this.requestStarted(e);
        break;
      case 'memory.retrieved':
        this.memoryRetrieved(e);
        break;
      case 'run.interrupted':
      case 'run.rolled_back':
        this.stoppedByNewerMessage(e);
        break;
      case 'approval.resolved':
        this.edited(e);
        break;
      default:
        break;
    }
  }

  /** The session's frozen memory snapshot (ADR 0035): the latest `snapshot` retrieval's rendering. */
  private memoryRetrieved(e: StoredEvent<'memory.retrieved'>): void {
    if (e.data.purpose === 'snapshot' && typeof e.data.rendered === 'string')
      this.memorySnapshot = { sequence: e.sequence, retrievalId: e.data.retrievalId, text: e.data.rendered };
  }

  /**
   * A run a newer message stopped (issue 33): an interrupted run's tool turns are carried into the
   * next run's context; a rolled-back run's work after its user message is hidden from it.
   */
  private stoppedByNewerMessage(e: StoredEvent<'run.interrupted' | 'run.rolled_back'>): void {
    for (const u of this.units) {
      if (u.runId !== e.runId) continue;
      if (e.type === 'run.rolled_back' && u.kind !== 'user') u.hidden = true;
      if (e.type === 'run.interrupted' && u.kind === 'tool_turn') u.carried = true;
    }
  }

  /** A proposed call joins its model step's tool turn (one turn per run and step). */
  private proposed(e: StoredEvent<'tool.call.proposed'>): void {
    // A bridged call is the program's, not the model's: its outcome reaches the model inside the
    // `sandbox.run_program` result, and a provider refuses a tool result it never asked for.
    if (e.data.via === 'bridge') return;
    const key = `${e.runId ?? ''}#${e.data.step}`;
    let turn = this.turns.get(key);
    if (!turn) {
      turn = unit('tool_turn', e, '', null);
      this.turns.set(key, turn);
      this.units.push(turn);
    } else turn.sources.push(e.sequence);
    const pair: ToolPair = {
      call: { kind: 'tool_call', callId: e.data.callId, name: e.data.toolName, arguments: e.data.arguments ?? {} },
      callSequence: e.sequence,
      result: null,
      resultSequence: null,
      resultTrust: null,
    };
    turn.calls.push(pair);
    turn.countedBy = null;
    this.calls.set(e.data.invocationId, { unit: turn, pair });
  }

  /** A call approved with edits: its result will carry the edited arguments and a note saying so. */
  private edited(e: StoredEvent<'approval.resolved'>): void {
    const edit = e.data.edit;
    const found = edit ? this.calls.get(edit.invocationId) : undefined;
    if (edit && found) found.pair.editedArguments = edit.editedArguments;
  }

  /** The first outcome of a call becomes its result; a plan.update result also sets the working state. */
  private answered(e: StoredEvent<'tool.call.completed' | 'tool.call.failed' | 'tool.call.denied'>): void {
    const found = this.calls.get(e.data.invocationId);
    if (!found || found.pair.result !== null) return;
    const output =
      e.type === 'tool.call.completed'
        ? e.data.result
        : {
            error: {
              code: e.type === 'tool.call.failed' ? e.data.errorCode : e.data.reasonCode,
              message: e.type === 'tool.call.failed' ? e.data.message : e.data.explanation,
            },
          };
    const edited = found.pair.editedArguments;
    found.pair.result = {
      kind: 'tool_result',
      callId: found.pair.call.callId,
      name: found.pair.call.name,
      // The model proposed other arguments: it must not take the result for that of its own call.
      output: edited ? { note: HUMAN_EDIT_NOTE, edited_arguments: edited, result: output } : output,
      isError: e.type !== 'tool.call.completed',
      trust: 'tool_untrusted',
    };
    found.pair.resultSequence = e.sequence;
    found.pair.resultTrust = e.type === 'tool.call.completed' ? e.data.trust : 'internal_tool';
    found.unit.sources.push(e.sequence);
    found.unit.countedBy = null;
    if (e.type === 'tool.call.completed' && found.pair.call.name === PLAN_UPDATE_TOOL) {
      const state = parseWorkingState((e.data.result as { workingState?: unknown }).workingState);
      if (state) this.planState = { sequence: e.sequence, state };
    }
  }

  private requestStarted(e: StoredEvent<'model.request.started'>): void {
    // v3 records the epoch it was built in, so a fold restored mid-session numbers epochs alike.
    const recorded = (e.data.context as { prefixEpoch?: unknown } | null | undefined)?.prefixEpoch;
    if (typeof recorded === 'number') this.prefixEpoch = recorded;
    else if (e.data.prefixHash !== this.lastPrefixHash) this.prefixEpoch += 1;
    this.lastPrefixHash = e.data.prefixHash;
  }

  /** The working state in force: the newer of the latest compaction's and the latest plan.update's. */
  workingState(): WorkingState {
    const fromCompaction = this.compaction?.data.workingState ?? null;
    if (this.planState && (!this.compaction || this.planState.sequence > this.compaction.sequence)) {
      return this.planState.state;
    }
    return fromCompaction ?? this.planState?.state ?? EMPTY_WORKING_STATE;
  }
}

function corrupt(e: StoredEvent, why: string): never {
  throw new ContextBuildError(`event ${e.id} (sequence ${e.sequence}, ${e.type}) is corrupt: ${why}`, {
    eventId: e.id,
    sequence: e.sequence,
    type: e.type,
  });
}

/** A user message or an assistant answer as its unit (a payload without its text is corrupt). */
function messageUnit(e: StoredEvent<'user.message.created' | 'assistant.message.completed'>): HistoryUnit {
  if (e.type === 'user.message.created') {
    if (!Array.isArray(e.data.content)) corrupt(e, 'content is not a list');
    return unit('user', e, textOf(e.data.content), e.data.messageId);
  }
  if (typeof e.data.text !== 'string') corrupt(e, 'text is not a string');
  return unit('assistant', e, e.data.text, null);
}

function unit(kind: HistoryUnit['kind'], e: StoredEvent, text: string, messageId: string | null): HistoryUnit {
  return {
    kind,
    runId: e.runId,
    sequence: e.sequence,
    messageId,
    sources: [e.sequence],
    text,
    calls: [],
    tokens: 0,
    countedBy: null,
  };
}

/** The conversation items of a unit; a call without a result is left out (never a dangling call). */
export function unitItems(u: HistoryUnit): ConversationItem[] {
  switch (u.kind) {
    case 'user':
      return [{ kind: 'user', messageId: u.messageId ?? '', content: [{ type: 'text', text: u.text }] }];
    case 'assistant':
      return [{ kind: 'assistant', text: u.text }];
    case 'tool_turn': {
      const done = u.calls.filter((p) => p.result !== null);
      return [...done.map((p) => p.call), ...done.map((p) => p.result as ToolResultItem)];
    }
  }
}

/**
 * Whether a unit belongs in run `runId`'s context: prior runs contribute only portable text, except
 * an interrupted run, whose partial work (calls with their results) the next run starts with, and a
 * rolled-back run, whose work after its user message no later run sees.
 */
export function relevantTo(u: HistoryUnit, runId: string): boolean {
  if (u.hidden === true && u.runId !== runId) return false;
  return u.kind !== 'tool_turn' || u.runId === runId || u.carried === true;
}

/**
 * The runs whose user message came after the current run's (`from`, its sequence): messages queued
 * behind it (`multitask_strategy: enqueue`) while it works or waits. The current run never sees
 * them — they are its successors' turns, not its history — while a later run still sees all of an
 * earlier one's work, even the part committed after its own message was queued.
 */
function runsQueuedAfter(units: readonly HistoryUnit[], runId: string, from: number): ReadonlySet<string> {
  const later = new Set<string>();
  for (let i = units.length - 1; i >= 0 && units[i].sequence > from; i--) {
    const u = units[i];
    if (u.kind === 'user' && u.runId !== null && u.runId !== runId) later.add(u.runId);
  }
  return later;
}

/** Tokens of a unit under `estimator`, counted once and cached on the unit. */
export function unitTokens(u: HistoryUnit, estimator: TokenEstimator): number {
  if (u.countedBy === estimator.id) return u.tokens;
  let n = 0;
  for (const item of unitItems(u)) n += itemTokens(item, estimator);
  u.tokens = n;
  u.countedBy = estimator.id;
  return n;
}

export function itemTokens(item: ConversationItem, estimator: TokenEstimator): number {
  switch (item.kind) {
    case 'user':
      return ITEM_OVERHEAD_TOKENS + estimator.count(textOf(item.content));
    case 'assistant':
    case 'system':
      return ITEM_OVERHEAD_TOKENS + estimator.count(item.text);
    case 'tool_call':
      return ITEM_OVERHEAD_TOKENS + estimator.count(item.name) + estimator.count(JSON.stringify(item.arguments));
    case 'tool_result':
      return ITEM_OVERHEAD_TOKENS + estimator.count(JSON.stringify(item.output) ?? '');
    case 'provider_reasoning':
      return ITEM_OVERHEAD_TOKENS + estimator.count(JSON.stringify(item.opaquePayload));
  }
}

export interface Selection {
  /** Units sent, oldest first. */
  readonly kept: HistoryUnit[];
  /** Eligible units that did not fit, oldest first (candidates for compaction). */
  readonly overflow: HistoryUnit[];
  readonly tokens: number;
  /** Tokens of the pinned units alone (the current message and the latest tool turn). */
  readonly pinnedTokens: number;
  /** Whether the pinned units fit the budget. */
  readonly pinnedFit: boolean;
}

/**
 * History selection (plan §27.4): newest first within `budget`, whole units only. The units from
 * `pinFrom` on (the current user message and the active tool loop's latest turn) are always kept;
 * once one older unit does not fit, it and everything older overflow (no holes in the dialogue).
 * Reads only the units after `afterSequence` (the latest compaction's coverage) that are relevant.
 */
export function selectHistory(
  units: readonly HistoryUnit[],
  opts: {
    readonly runId: string;
    readonly afterSequence: number;
    readonly pinFrom: number;
    readonly budget: number;
    readonly estimator: TokenEstimator;
  },
): Selection {
  const kept: HistoryUnit[] = [];
  const overflow: HistoryUnit[] = [];
  let tokens = 0;
  let pinnedTokens = 0;
  let full = false;
  const later = runsQueuedAfter(units, opts.runId, opts.pinFrom);
  for (let i = units.length - 1; i >= 0; i--) {
    const u = units[i];
    if (u.sequence <= opts.afterSequence) break;
    if (!relevantTo(u, opts.runId) || (u.runId !== null && later.has(u.runId))) continue;
    const n = unitTokens(u, opts.estimator);
    if (u.sequence >= opts.pinFrom) {
      pinnedTokens += n;
      tokens += n;
      kept.push(u);
    } else if (!full && tokens + n <= opts.budget) {
      tokens += n;
      kept.push(u);
    } else {
      full = true;
      overflow.push(u);
    }
  }
  kept.reverse();
  overflow.reverse();
  return { kept, overflow, tokens, pinnedTokens, pinnedFit: pinnedTokens <= opts.budget };
}
