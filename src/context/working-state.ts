import { EMPTY_WORKING_STATE, TASK_STATUSES, type TaskState, type WorkingState } from '../domain/context/working-state';

/** The optional internal tool through which the model updates the session's working state. */
export const PLAN_UPDATE_TOOL = 'plan.update';

const MAX_ITEMS = 20;
const MAX_TEXT = 500;

/** Validates a working state from an untrusted source (tool output, model output); null when malformed. */
export function parseWorkingState(value: unknown): WorkingState | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const v = value as Record<string, unknown>;
  const text = (x: unknown): string | null | undefined =>
    x === null || x === undefined ? null : typeof x === 'string' ? x.slice(0, MAX_TEXT) : undefined;
  const strings = (x: unknown): string[] | null =>
    x === undefined
      ? []
      : Array.isArray(x) && x.every((s) => typeof s === 'string')
        ? x.slice(0, MAX_ITEMS).map((s) => s.slice(0, MAX_TEXT))
        : null;
  const objective = text(v.objective);
  const nextAction = text(v.nextAction);
  const constraints = strings(v.constraints);
  const openQuestions = strings(v.openQuestions);
  if (objective === undefined || nextAction === undefined || !constraints || !openQuestions) return null;
  const tasks = parseTasks(v.tasks);
  const facts = parseFacts(v.establishedFacts);
  if (!tasks || !facts) return null;
  return {
    objective,
    constraints,
    tasks: tasks.slice(0, MAX_ITEMS),
    establishedFacts: facts.slice(0, MAX_ITEMS),
    openQuestions,
    nextAction,
  };
}

/** Unique strings, first occurrence wins, at most `max` (the oldest are kept: constraints persist). */
export function uniq(values: Iterable<string>, max = MAX_ITEMS): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const v of values) {
    const k = v.trim();
    if (k === '' || seen.has(k.toLowerCase())) continue;
    seen.add(k.toLowerCase());
    out.push(k);
    if (out.length >= max) break;
  }
  return out;
}

export function mergeWorkingState(base: WorkingState, extra: Partial<WorkingState>): WorkingState {
  return {
    objective: base.objective ?? extra.objective ?? null,
    constraints: uniq([...base.constraints, ...(extra.constraints ?? [])]),
    tasks: base.tasks.length > 0 ? base.tasks : (extra.tasks ?? []),
    establishedFacts: base.establishedFacts.length > 0 ? base.establishedFacts : (extra.establishedFacts ?? []),
    openQuestions: uniq([...base.openQuestions, ...(extra.openQuestions ?? [])]),
    nextAction: base.nextAction ?? extra.nextAction ?? null,
  };
}

export function isEmptyWorkingState(s: WorkingState): boolean {
  return (
    s.objective === null &&
    s.constraints.length === 0 &&
    s.tasks.length === 0 &&
    s.establishedFacts.length === 0 &&
    s.openQuestions.length === 0 &&
    s.nextAction === null
  );
}

/** The deterministic Region B rendering of a working state (empty string when there is nothing). */
export function renderWorkingState(s: WorkingState): string {
  if (isEmptyWorkingState(s)) return '';
  const lines = ['[working state]'];
  if (s.objective) lines.push(`Objective: ${s.objective}`);
  if (s.constraints.length) lines.push('Constraints (always honour):', ...s.constraints.map((c) => `- ${c}`));
  if (s.tasks.length) lines.push('Tasks:', ...s.tasks.map((t) => `- [${t.status}] ${t.description}`));
  if (s.establishedFacts.length)
    lines.push(
      'Established facts:',
      ...s.establishedFacts.map((f) => `- ${f.statement}${f.sourceSequence ? ` (event #${f.sourceSequence})` : ''}`),
    );
  if (s.openQuestions.length) lines.push('Open questions:', ...s.openQuestions.map((q) => `- ${q}`));
  if (s.nextAction) lines.push(`Next action: ${s.nextAction}`);
  return lines.join('\n');
}

export { EMPTY_WORKING_STATE };

/** A list field's items; an absent field is empty, anything but a list is one bad item. */
function itemsOf(x: unknown): unknown[] {
  return Array.isArray(x) ? x : x === undefined ? [] : [null];
}

/** Tasks with a description and a known status; null when any is malformed. */
function parseTasks(value: unknown): TaskState[] | null {
  const tasks: TaskState[] = [];
  for (const t of itemsOf(value)) {
    const task = t as { description?: unknown; status?: unknown } | null;
    if (!task || typeof task.description !== 'string' || !TASK_STATUSES.includes(task.status as TaskState['status']))
      return null;
    tasks.push({ description: task.description.slice(0, MAX_TEXT), status: task.status as TaskState['status'] });
  }
  return tasks;
}

/** Facts as plain statements or `{ statement, sourceSequence }`; null when any is malformed. */
function parseFacts(value: unknown): WorkingState['establishedFacts'][number][] | null {
  const facts: WorkingState['establishedFacts'][number][] = [];
  for (const f of itemsOf(value)) {
    const fact = f as { statement?: unknown; sourceSequence?: unknown } | string | null;
    if (typeof fact === 'string') facts.push({ statement: fact.slice(0, MAX_TEXT), sourceSequence: null });
    else if (fact && typeof fact.statement === 'string')
      facts.push({
        statement: fact.statement.slice(0, MAX_TEXT),
        sourceSequence:
          typeof fact.sourceSequence === 'number' && Number.isInteger(fact.sourceSequence) && fact.sourceSequence > 0
            ? fact.sourceSequence
            : null,
      });
    else return null;
  }
  return facts;
}
