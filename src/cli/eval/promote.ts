import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import Ajv from 'ajv';
import { stringify } from 'yaml';
import { ConflictError, NotFoundError, ValidationError } from '../../domain/errors';
import type { TrajectoryDocument, TrajectoryMessage } from '../../domain/trajectory/document';

/**
 * `agent eval promote <export-file> --run ID` (plan §31.2, ADR 0016): turns one exported trajectory
 * into a deterministic eval case. The model's recorded turns become a fake-provider fixture (the
 * replayed model says exactly what the real one said), the recorded tool calls become the expected
 * calls, and the tools run for real again. The case is marked `source: trajectory`.
 *
 * The conversion is lossy by design: the text of a tool-using turn is not in the log (only its
 * length), retries of failed model calls are not replayed, and tool results are re-computed.
 */

const toolCall = {
  type: 'object',
  required: ['id', 'type', 'function'],
  properties: {
    id: { type: 'string' },
    type: { const: 'function' },
    function: {
      type: 'object',
      required: ['name', 'arguments'],
      properties: { name: { type: 'string', minLength: 1 }, arguments: { type: 'string' } },
    },
  },
};

/** The parts of a trajectory document (schema version 1) promotion relies on. */
const TRAJECTORY_SCHEMA = {
  type: 'object',
  required: ['format', 'schema_version', 'run_id', 'agent', 'limits', 'outcome', 'messages'],
  properties: {
    format: { const: 'agent-core.trajectory' },
    schema_version: { const: 1 },
    run_id: { type: 'string', minLength: 1 },
    agent: {
      type: 'object',
      required: ['id', 'version'],
      properties: { id: { type: 'string', minLength: 1 }, version: { type: 'integer', minimum: 1 } },
    },
    limits: { type: 'object' },
    outcome: {
      type: 'object',
      required: ['label', 'status'],
      properties: {
        label: { enum: ['succeeded', 'failed'] },
        status: { enum: ['completed', 'failed', 'cancelled'] },
      },
    },
    messages: {
      type: 'array',
      items: {
        type: 'object',
        required: ['role'],
        properties: { role: { enum: ['system', 'user', 'assistant', 'tool'] } },
        allOf: [
          {
            if: { properties: { role: { enum: ['system', 'user'] } } },
            then: { required: ['content'], properties: { content: { type: 'string' } } },
          },
          {
            if: { properties: { role: { const: 'assistant' } } },
            then: {
              required: ['content'],
              properties: { content: { type: ['string', 'null'] }, tool_calls: { type: 'array', items: toolCall } },
            },
          },
          {
            if: { properties: { role: { const: 'tool' } } },
            then: {
              required: ['tool_call_id', 'name', 'content'],
              properties: { tool_call_id: { type: 'string' }, name: { type: 'string' }, content: { type: 'string' } },
            },
          },
        ],
      },
    },
  },
};

const validate = new Ajv({ allErrors: false, allowUnionTypes: true, strict: false }).compile(TRAJECTORY_SCHEMA);

export interface PromoteOptions {
  readonly file: string;
  readonly runId: string;
  readonly casesDir: string;
  readonly fixturesDir: string;
  /** Case name (snake_case); default `trajectory_<first 8 hex of the run id>`. */
  readonly name?: string;
}

export interface Promoted {
  readonly caseFile: string;
  readonly fixtureFile: string;
  readonly name: string;
}

/** Reads the export line by line until the run's document; any corrupt line before it is refused by number. */
export async function readTrajectory(file: string, runId: string): Promise<TrajectoryDocument> {
  let stream: fs.ReadStream;
  try {
    await fs.promises.access(file, fs.constants.R_OK);
    stream = fs.createReadStream(file, { encoding: 'utf8' });
  } catch (e) {
    throw new ValidationError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, {
      field: 'file',
    });
  }
  const lines = readline.createInterface({ input: stream, crlfDelay: Infinity });
  let n = 0;
  try {
    for await (const line of lines) {
      n++;
      if (line.trim() === '') continue;
      let doc: unknown;
      try {
        doc = JSON.parse(line);
      } catch (e) {
        throw new ValidationError(`${file} line ${n}: not valid JSON (${(e as Error).message})`, { line: n });
      }
      if (!validate(doc)) {
        const err = validate.errors?.[0];
        const where = err?.instancePath ? err.instancePath.slice(1).replace(/\//g, '.') : '(document)';
        throw new ValidationError(
          `${file} line ${n}: not a trajectory document: ${where} ${err?.message ?? ''}`.trim(),
          {
            line: n,
          },
        );
      }
      const d = doc as unknown as TrajectoryDocument;
      if (d.run_id === runId) return d;
    }
  } finally {
    lines.close();
    stream.destroy();
  }
  throw new NotFoundError(`run ${runId} is not in ${file}`, { runId });
}

/** The fixture and case for one trajectory (pure). */
export function trajectoryToCase(doc: TrajectoryDocument, name: string): { fixture: object; evalCase: object } {
  const assistant = doc.messages.filter(
    (m): m is Extract<TrajectoryMessage, { role: 'assistant' }> => m.role === 'assistant',
  );
  if (assistant.length === 0)
    throw new ValidationError(`run ${doc.run_id} has no recorded model turn to replay`, { runId: doc.run_id });
  const user = doc.messages.find((m) => m.role === 'user');
  if (!user || user.content.trim() === '')
    throw new ValidationError(`run ${doc.run_id} has no user message to replay`, { runId: doc.run_id });
  const turns = assistant.map((m) => {
    const turn: Record<string, unknown> = {};
    if (m.content !== null && m.content !== '') turn.text = m.content;
    if (m.tool_calls && m.tool_calls.length > 0)
      turn.tool_calls = m.tool_calls.map((c) => {
        const parsed = parseObject(c.function.arguments);
        return parsed !== null
          ? { name: c.function.name, arguments: parsed, id: c.id }
          : { name: c.function.name, raw_arguments: c.function.arguments, id: c.id };
      });
    if (turn.text === undefined && turn.tool_calls === undefined) turn.text = '';
    return turn;
  });
  const calls = new Map<string, Record<string, unknown>[]>();
  for (const m of assistant)
    for (const c of m.tool_calls ?? []) {
      const list = calls.get(c.function.name) ?? [];
      list.push(parseObject(c.function.arguments) ?? {});
      calls.set(c.function.name, list);
    }
  const expected: Record<string, unknown> = { terminal_status: doc.outcome.status };
  const finalText = doc.outcome.label === 'succeeded' ? assistant[assistant.length - 1].content : null;
  if (finalText) expected.final_text_contains = [finalText];
  expected.tool_calls = [...calls].map(([tool, args]) =>
    args.length === 1 ? { name: tool, count: 1, arguments_subset: args[0] } : { name: tool, count: args.length },
  );
  if (calls.size === 0) expected.forbidden_tool_calls = [];
  const evalCase: Record<string, unknown> = {
    name,
    description: `Promoted from trajectory of run ${doc.run_id} (${doc.outcome.label}${doc.outcome.reason ? `: ${doc.outcome.reason}` : ''}).`,
    source: 'trajectory',
    source_run_id: doc.run_id,
    agent_id: doc.agent.id,
    input: { text: user.content },
    model_fixture: name,
  };
  const limits = caseLimits(doc.limits);
  if (Object.keys(limits).length > 0) evalCase.limits = limits;
  evalCase.expected = expected;
  return {
    fixture: {
      name,
      description: `Recorded model turns of run ${doc.run_id} (${doc.models.join(', ') || 'unknown model'}).`,
      turns,
    },
    evalCase,
  };
}

/** Writes the fixture and the case; refuses to overwrite either. */
export async function promoteTrajectory(o: PromoteOptions): Promise<Promoted> {
  const name =
    o.name ??
    `trajectory_${o.runId
      .replace(/[^0-9a-f]/gi, '')
      .slice(0, 8)
      .toLowerCase()}`;
  if (!/^[a-z][a-z0-9_]*$/.test(name))
    throw new ValidationError(`case name must be snake_case (got ${name})`, { field: 'name' });
  for (const d of [o.casesDir, o.fixturesDir])
    if (!fs.existsSync(d) || !fs.statSync(d).isDirectory())
      throw new ValidationError(`${d} is not a directory`, { field: 'dir' });
  const doc = await readTrajectory(o.file, o.runId);
  const { fixture, evalCase } = trajectoryToCase(doc, name);
  const existing = fs.readdirSync(o.casesDir);
  if (existing.some((f) => f.replace(/^\d+_/, '').replace(/\.ya?ml$/, '') === name))
    throw new ConflictError(`a case named ${name} already exists in ${o.casesDir}`, { name });
  const fixtureFile = path.join(o.fixturesDir, `${name}.yaml`);
  if (fs.existsSync(fixtureFile)) throw new ConflictError(`fixture ${fixtureFile} already exists`, { name });
  const next = Math.max(0, ...existing.map((f) => Number(/^(\d+)_/.exec(f)?.[1] ?? 0))) + 1;
  const caseFile = path.join(o.casesDir, `${String(next).padStart(2, '0')}_${name}.yaml`);
  await fs.promises.writeFile(fixtureFile, stringify(fixture), { flag: 'wx' });
  try {
    await fs.promises.writeFile(caseFile, stringify(evalCase), { flag: 'wx' });
  } catch (e) {
    await fs.promises.rm(fixtureFile, { force: true });
    throw e;
  }
  return { caseFile, fixtureFile, name };
}

function parseObject(s: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(s);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function caseLimits(l: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const int = (v: unknown, min: number) => Number.isInteger(v) && (v as number) >= min;
  if (int(l.max_steps, 1)) out.max_steps = l.max_steps;
  if (int(l.max_model_calls, 1)) out.max_model_calls = l.max_model_calls;
  if (int(l.max_tool_calls, 0)) out.max_tool_calls = l.max_tool_calls;
  return out;
}
