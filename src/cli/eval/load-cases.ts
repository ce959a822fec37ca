import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv from 'ajv';
import { parseDocument } from 'yaml';
import type { EventType } from '../../domain/events/payloads';
import type { RunLimits } from '../../domain/run/limits';
import { CaseFileError, issuesFromAjv, type CaseIssue } from './case-errors';
import { CASE_FILE_SCHEMA, type CaseFile } from './case-schema';
import type { EvalCase, Expected, InterventionAction } from './case-types';

/** `NN_name.yaml`: the number orders the suite, the rest must equal the case's `name`. */
const FILE_NAME = /^(\d{2,3})_([a-z][a-z0-9_]*)\.ya?ml$/;

export interface LoadCasesOptions {
  /** config/model-fixtures: every runnable case's `model_fixture` must exist there. */
  readonly fixturesDir: string;
  /** The agent of cases without `agent_id`. */
  readonly defaultAgentId?: string;
  /** How files are named in messages (default: relative to the working directory). */
  readonly displayPath?: (absolute: string) => string;
}

/**
 * Loads every case file in `dir`, sorted by file name. All files are checked before anything
 * throws, so one run of the command lists every problem; the error names each file and field.
 */
export function loadCases(dir: string, opts: LoadCasesOptions): EvalCase[] {
  const show = opts.displayPath ?? displayPath;
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new CaseFileError([{ file: show(dir), field: '(file)', message: 'case directory does not exist' }]);
  }
  const validate = new Ajv({ allErrors: true, allowUnionTypes: true }).compile<CaseFile>(CASE_FILE_SCHEMA);
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort();
  const issues: CaseIssue[] = [];
  const cases: EvalCase[] = [];
  const numbers = new Map<string, string>();
  for (const f of files) {
    const file = show(path.join(dir, f));
    const issue = (field: string, message: string) => issues.push({ file, field, message });
    const m = FILE_NAME.exec(f);
    if (!m) {
      issue('(file)', 'file name must be NN_<name>.yaml, e.g. 02_calculator_tool.yaml');
      continue;
    }
    const [, number, fileCaseName] = m as unknown as [string, string, string];
    const clash = numbers.get(number);
    if (clash) issue('(file)', `case number ${number} is also used by ${clash}`);
    numbers.set(number, f);

    const doc = parseDocument(fs.readFileSync(path.join(dir, f), 'utf8'), { prettyErrors: true });
    if (doc.errors.length > 0) {
      for (const e of doc.errors) issue('(file)', `YAML: ${(e.message.split('\n')[0] ?? e.message).replace(/:$/, '')}`);
      continue;
    }
    const raw: unknown = doc.toJS();
    if (!validate(raw)) {
      issues.push(...issuesFromAjv(file, validate.errors ?? []));
      continue;
    }
    const before = issues.length;
    checkCaseContent(raw, f, fileCaseName, opts.fixturesDir, show, issue);
    if (issues.length === before)
      cases.push(toCase(raw, `${number}_${fileCaseName}`, file, opts.defaultAgentId ?? 'general'));
  }
  if (issues.length > 0) throw new CaseFileError(issues);
  return cases;
}

/** What the schema cannot say: the name matches the file, the regex compiles, the fixtures exist. */
function checkCaseContent(
  raw: CaseFile,
  f: string,
  fileCaseName: string,
  fixturesDir: string,
  show: (p: string) => string,
  issue: (field: string, message: string) => void,
): void {
  if (raw.name !== fileCaseName) issue('name', `must match the file name ("${fileCaseName}" in ${f})`);
  if (raw.expected.final_text_matches !== undefined) {
    try {
      new RegExp(raw.expected.final_text_matches);
    } catch (e) {
      issue('expected.final_text_matches', `is not a valid regular expression: ${(e as Error).message}`);
    }
  }
  if (raw.pending === undefined && !fixtureExists(fixturesDir, raw.model_fixture)) {
    issue('model_fixture', `no fixture "${raw.model_fixture}" in ${show(fixturesDir)}`);
  }
  // The replay assertion needs the client that disconnects, and a disconnect asserts nothing without it.
  const disconnects = (raw.interventions ?? []).filter((i) => i.action === 'disconnect_sse').length;
  if (raw.expected.sse_replay_exact === true && disconnects !== 1)
    issue('expected.sse_replay_exact', 'needs exactly one disconnect_sse intervention');
  if (disconnects > 0 && raw.expected.sse_replay_exact !== true)
    issue('interventions', 'a disconnect_sse intervention needs expected.sse_replay_exact: true');
  for (const [i, t] of (raw.input.preceding_turns ?? []).entries()) {
    if (raw.pending === undefined && t.model_fixture !== undefined && !fixtureExists(fixturesDir, t.model_fixture))
      issue(`input.preceding_turns[${i}].model_fixture`, `no fixture "${t.model_fixture}" in ${show(fixturesDir)}`);
  }
}

/** Relative to the working directory when inside it (`evals/cases/02_x.yaml`), else absolute. */
function displayPath(p: string): string {
  const rel = path.relative(process.cwd(), p);
  return rel === '' || rel.startsWith('..') || path.isAbsolute(rel) ? p : rel;
}

function fixtureExists(dir: string, name: string): boolean {
  return ['.yaml', '.yml'].some((ext) => fs.existsSync(path.join(dir, `${name}${ext}`)));
}

/** snake_case YAML to the camelCase case model; the schema already checked every value. */
function toCase(raw: CaseFile, id: string, file: string, defaultAgentId: string): EvalCase {
  const l = raw.limits ?? {};
  const limits: { -readonly [K in keyof RunLimits]?: RunLimits[K] } = {};
  if (l.max_steps !== undefined) limits.maxSteps = l.max_steps;
  if (l.max_model_calls !== undefined) limits.maxModelCalls = l.max_model_calls;
  if (l.max_tool_calls !== undefined) limits.maxToolCalls = l.max_tool_calls;
  if (l.max_input_tokens !== undefined) limits.maxInputTokens = l.max_input_tokens;
  if (l.max_output_tokens !== undefined) limits.maxOutputTokens = l.max_output_tokens;
  if (l.max_cost !== undefined) limits.maxCost = l.max_cost;
  if (l.deadline_seconds !== undefined) limits.deadlineSeconds = l.deadline_seconds;
  return {
    id,
    name: raw.name,
    description: raw.description.trim(),
    file,
    agentId: raw.agent_id ?? defaultAgentId,
    input: {
      text: raw.input.text,
      repeatWithSameIdempotencyKey: raw.input.repeat_with_same_idempotency_key ?? false,
      precedingTurns: (raw.input.preceding_turns ?? []).flatMap((t) =>
        Array.from({ length: t.repeat ?? 1 }, (_, i) => ({
          text: t.text.replaceAll('{{n}}', String(i + 1)),
          modelFixture: t.model_fixture ?? null,
        })),
      ),
    },
    modelFixture: raw.model_fixture,
    limits,
    interventions: (raw.interventions ?? []).map((i) => ({
      atEvent: i.at_event as EventType,
      occurrence: i.occurrence ?? 1,
      action: i.action as InterventionAction,
      text: i.text ?? null,
    })),
    pending: raw.pending?.trim() ?? null,
    timeoutSeconds: raw.timeout_seconds ?? null,
    expected: toExpected(raw.expected),
  };
}

/** Keys copied as they are, only renamed (the schema already checked each value's type). */
const RENAMED: readonly (readonly [keyof CaseFile['expected'], keyof Expected])[] = [
  ['terminal_status', 'terminalStatus'],
  ['final_text_contains', 'finalTextContains'],
  ['final_text_matches', 'finalTextMatches'],
  ['exact_tool_names', 'exactToolNames'],
  ['forbidden_tool_calls', 'forbiddenToolCalls'],
  ['maximum_steps', 'maximumSteps'],
  ['maximum_model_calls', 'maximumModelCalls'],
  ['maximum_tool_calls', 'maximumToolCalls'],
  ['expected_error_code', 'expectedErrorCode'],
  ['event_order', 'eventOrder'],
  ['event_counts', 'eventCounts'],
  ['approval_requested', 'approvalRequested'],
  ['approval_not_requested', 'approvalNotRequested'],
  ['no_unauthorized_side_effects', 'noUnauthorizedSideEffects'],
  ['tool_executions', 'toolExecutions'],
  ['tool_result_trust', 'toolResultTrust'],
  ['context_within_limit', 'contextWithinLimit'],
  ['context_compactions_at_least', 'contextCompactionsAtLeast'],
  ['summary_provenance_valid', 'summaryProvenanceValid'],
  ['conversation_replayable', 'conversationReplayable'],
  ['tool_executions_overlap', 'toolExecutionsOverlap'],
  ['sse_replay_exact', 'sseReplayExact'],
];

function toExpected(e: CaseFile['expected']): Expected {
  // Absent keys stay absent (not undefined-valued) so the checker sees exactly what was written.
  const out: Record<string, unknown> = {};
  for (const [from, to] of RENAMED) if (e[from] !== undefined) out[to] = e[from];
  if (e.tool_calls !== undefined) {
    out.toolCalls = e.tool_calls.map((t) => ({
      name: t.name,
      count: t.count ?? null,
      argumentsSubset: t.arguments_subset ?? null,
    }));
  }
  if (e.children !== undefined) {
    const c = e.children;
    out.children = {
      ...(c.statuses !== undefined ? { statuses: c.statuses } : {}),
      ...(c.usage_summed !== undefined ? { usageSummed: c.usage_summed } : {}),
      ...(c.budget_carved !== undefined ? { budgetCarved: c.budget_carved } : {}),
      ...(c.event_counts !== undefined ? { eventCounts: c.event_counts } : {}),
    };
  }
  if (e.artifacts !== undefined) {
    out.artifacts = e.artifacts.map((a) => ({
      name: a.name,
      sha256: a.sha256 ?? null,
      mediaType: a.media_type ?? null,
    }));
  }
  return out;
}
