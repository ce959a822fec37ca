import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv from 'ajv';
import { parseDocument } from 'yaml';
import { CaseFileError, issuesFromAjv, type CaseIssue } from '../case-errors';

/**
 * The memory suite (evals/memory/, issue 30 item 7): multi-session scripts run through real runs of
 * the offline demo model (or a named fake-model fixture), scored on what the runs retrieved and
 * what the store holds afterwards. docs/memory.md "Evaluation" describes the format.
 */
export const MEMORY_CATEGORIES = ['recall', 'conflict', 'isolation', 'deletion', 'injection', 'credential'] as const;
export type MemoryCategory = (typeof MEMORY_CATEGORIES)[number];
/** Who says a step: the case's owner, another principal of its tenant, the same principal id in another tenant. */
export const ACTORS = ['me', 'peer', 'stranger'] as const;
export type Actor = (typeof ACTORS)[number];

export interface MemoryStep {
  readonly as: Actor;
  /** The actor's session number: a new number opens a new session (a new snapshot). */
  readonly session: number;
  readonly say: string | null;
  /** A fake-model fixture for this turn instead of the demo model. */
  readonly model: string | null;
  /** A file put in the session's workspace before the turn (content no run wrote: untrusted). */
  readonly file: { readonly name: string; readonly text: string } | null;
  /** The answer to an approval the turn asks for (`forget`); absent: none is expected. */
  readonly approve: boolean | null;
  /** The right memory's statement: it must be among the run's top 3 retrieved (recall@1/@3). */
  readonly recall: string | null;
  /** Text no retrieved memory and not the answer may hold. */
  readonly never: readonly string[];
  readonly answerContains: readonly string[];
}

export interface ExpectedMemory {
  readonly statement: string;
  readonly status: string;
  readonly trust: string | null;
}

export interface MemoryCase {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly category: MemoryCategory;
  readonly steps: readonly MemoryStep[];
  /** The owner's memories at the end (exactly these, any order); null: not checked. */
  readonly memories: readonly ExpectedMemory[] | null;
  /** Text no memory of the case's tenants holds at the end (SQL over memory_records). */
  readonly absent: readonly string[];
}

const text = { type: 'string', minLength: 1, maxLength: 2000 } as const;
const texts = { type: 'array', items: text } as const;
const SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'description', 'category', 'steps'],
  properties: {
    name: { type: 'string', pattern: '^[a-z][a-z0-9_]*$' },
    description: text,
    category: { enum: [...MEMORY_CATEGORIES] },
    steps: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          as: { enum: [...ACTORS] },
          session: { type: 'integer', minimum: 1, maximum: 20 },
          say: text,
          model: { type: 'string', pattern: '^[a-z0-9_]+$' },
          file: {
            type: 'object',
            additionalProperties: false,
            required: ['name', 'text'],
            properties: { name: { type: 'string', pattern: '^[A-Za-z0-9_.-]+$' }, text },
          },
          approve: { type: 'boolean' },
          recall: text,
          never: texts,
          answer_contains: texts,
        },
        required: ['say'],
      },
    },
    expect: {
      type: 'object',
      additionalProperties: false,
      properties: {
        memories: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['statement', 'status'],
            properties: {
              statement: text,
              status: { type: 'string' },
              trust: { enum: ['user', 'inferred', 'external'] },
            },
          },
        },
        absent: texts,
      },
    },
  },
} as const;

interface RawStep {
  as?: Actor;
  session?: number;
  say: string;
  model?: string;
  file?: { name: string; text: string };
  approve?: boolean;
  recall?: string;
  never?: string[];
  answer_contains?: string[];
}
interface RawCase {
  name: string;
  description: string;
  category: MemoryCategory;
  steps: RawStep[];
  expect?: { memories?: { statement: string; status: string; trust?: string }[]; absent?: string[] };
}

const FILE_NAME = /^(\d{2,3})_([a-z][a-z0-9_]*)\.ya?ml$/;

function caseOf(id: string, raw: RawCase): MemoryCase {
  return {
    id,
    name: raw.name,
    description: raw.description,
    category: raw.category,
    steps: raw.steps.map((s) => ({
      as: s.as ?? 'me',
      session: s.session ?? 1,
      say: s.say,
      model: s.model ?? null,
      file: s.file ?? null,
      approve: s.approve ?? null,
      recall: s.recall ?? null,
      never: s.never ?? [],
      answerContains: s.answer_contains ?? [],
    })),
    memories:
      raw.expect?.memories?.map((m) => ({ statement: m.statement, status: m.status, trust: m.trust ?? null })) ?? null,
    absent: raw.expect?.absent ?? [],
  };
}

/**
 * Loads evals/memory/NN_<name>.yaml, sorted by file name; every file is checked before anything
 * throws (one CaseFileError lists every problem), and a `model` must name an existing fixture.
 */
export function loadMemoryCases(dir: string, fixturesDir: string): MemoryCase[] {
  if (!fs.existsSync(dir))
    throw new CaseFileError([{ file: dir, field: '(file)', message: 'directory does not exist' }]);
  const validate = new Ajv({ allErrors: true }).compile<RawCase>(SCHEMA);
  const issues: CaseIssue[] = [];
  const cases: MemoryCase[] = [];
  for (const f of fs
    .readdirSync(dir)
    .filter((x) => /\.ya?ml$/.test(x))
    .sort()) {
    const file = path.join(dir, f);
    const m = FILE_NAME.exec(f);
    const doc = parseDocument(fs.readFileSync(file, 'utf8'));
    const raw: unknown = doc.errors.length === 0 ? doc.toJS() : null;
    if (!m) issues.push({ file, field: '(file)', message: 'file name must be NN_<name>.yaml' });
    else if (doc.errors.length > 0) issues.push({ file, field: '(file)', message: `YAML: ${doc.errors[0].message}` });
    else if (!validate(raw)) issues.push(...issuesFromAjv(file, validate.errors ?? []));
    else if (raw.name !== m[2]) issues.push({ file, field: 'name', message: `must equal the file's name "${m[2]}"` });
    else {
      for (const [i, s] of raw.steps.entries())
        if (s.model && !fs.existsSync(path.join(fixturesDir, `${s.model}.yaml`)))
          issues.push({ file, field: `steps[${i}].model`, message: `no fixture ${s.model}.yaml` });
      cases.push(caseOf(`${m[1]}_${m[2]}`, raw));
    }
  }
  if (issues.length > 0) throw new CaseFileError(issues);
  return cases;
}
