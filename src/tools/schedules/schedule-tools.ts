import type { Actor } from '../../domain/deciders/decider';
import { AgentError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { ToolResult, ToolSpec } from '../../domain/tools/tool-spec';
import type { ToolExecutionContext } from '../../ports/tool';
import type { ScheduleOperations, ScheduleView } from '../../ports/schedules';
import type { ExtendedTool } from '../tool-extensions';

/**
 * The conversational schedule tools (issue 29 item 7, plan Milestones 19, 20, 23): the schedule
 * service every surface uses, as the run's principal. The writing ones are `external_write` (the
 * policy asks a human first) and their approval shows the cadence in words and the next three
 * firings. Conversational schedules request no scopes (least privilege, plan Milestone 19): their
 * runs may answer, not act.
 */

const ID = { type: 'string', minLength: 36, maxLength: 36, description: 'The schedule id (from schedule.list)' };
const REVISION = {
  type: 'integer',
  minimum: 1,
  description: 'The revision schedule.list showed; a change in between refuses the call',
};
const CADENCE = {
  type: 'object',
  description:
    'One of {kind:"once", at:"2027-03-28T08:00", time_zone} | {kind:"once", in_seconds} | {kind:"daily", time:"08:00", time_zone} | ' +
    '{kind:"weekly", days:["mon","fri"], time, time_zone} | {kind:"monthly", day:1-31|"last", time, time_zone} | ' +
    '{kind:"yearly", month, day, time, time_zone}. time_zone is an IANA zone such as "Europe/Paris".',
};

function spec(name: string, description: string, input: Record<string, unknown>, write: boolean): ToolSpec {
  const required = Object.keys(input).filter((k) => !['title', 'message', 'cadence', 'status'].includes(k));
  return {
    name,
    version: '1.0.0',
    description,
    inputSchema: { type: 'object', properties: input, required, additionalProperties: false },
    outputSchema: null,
    sideEffect: write ? 'external_write' : 'read',
    risk: write ? 'high' : 'low',
    idempotency: write ? 'conditional' : 'read_only',
    requiredScopes: [write ? 'schedules.write' : 'schedules.read'],
    timeoutSeconds: 10,
    maximumOutputBytes: 16_384,
    allowParallel: !write,
  };
}

function principalOf(ctx: ToolExecutionContext): Principal {
  return { tenantId: ctx.tenantId, principalId: ctx.principalId, roles: new Set(), scopes: new Set() };
}

function actorOf(ctx: ToolExecutionContext): Actor {
  return { actorType: 'worker', actorId: `run:${ctx.runId}` };
}

/** What the model sees of a schedule: a summary, never its message, limits, scopes or principal. */
function summary(s: ScheduleView): Record<string, unknown> {
  return {
    schedule_id: s.id,
    title: s.title,
    status: s.status,
    revision: s.revision,
    cadence: s.cadenceDescription,
    next_fire_at: s.nextFireAt,
    next_fire_at_local: s.nextFireAtLocal,
  };
}

async function outcome(run: () => Promise<Record<string, unknown>>): Promise<ToolResult> {
  try {
    return { ok: true, output: await run() };
  } catch (e) {
    if (e instanceof AgentError) return { ok: false, errorCode: e.code, message: e.message, retryable: false };
    throw e;
  }
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** The approval text of a create or an update: the cadence in words and its next three firings. */
function cadencePreview(ops: ScheduleOperations, cadence: unknown): string {
  const c = cadence as Record<string, unknown> | undefined;
  if (c && c.kind === 'once' && typeof c.in_seconds === 'number') return `once, ${c.in_seconds} s after this approval`;
  try {
    const p = ops.preview(cadence, 3);
    return `${p.description}; next: ${p.local.join(', ') || 'none'}`;
  } catch (e) {
    return `an invalid cadence (${e instanceof Error ? e.message : String(e)})`;
  }
}

function createTool(ops: ScheduleOperations): ExtendedTool {
  return {
    spec: spec(
      'schedule.create',
      'Creates a schedule: the message is sent to you again at the given times, in a new conversation. Needs approval.',
      {
        title: { type: 'string', minLength: 1, maxLength: 200 },
        message: { type: 'string', minLength: 1, maxLength: 4000 },
        cadence: CADENCE,
      },
      true,
    ),
    trust: 'internal_tool',
    approvalSummary: (args) =>
      `create schedule ${JSON.stringify(str(args.title) || str(args.message).slice(0, 60))}: ${cadencePreview(ops, args.cadence)}`,
    execute: (args, ctx) =>
      outcome(async () => {
        const r = await ops.create(
          principalOf(ctx),
          { message: args.message, title: args.title, cadence: args.cadence, scopes: [] },
          { idempotencyKey: ctx.idempotencyKey, actor: actorOf(ctx) },
        );
        return { ...summary(r.schedule), replayed: r.replayed };
      }),
  };
}

function listTool(ops: ScheduleOperations): ExtendedTool {
  return {
    spec: spec(
      'schedule.list',
      "Lists the user's schedules (id, title, status, revision, cadence, next firing); newest first.",
      { status: { type: 'string', enum: ['active', 'paused', 'completed', 'cancelled'] } },
      false,
    ),
    trust: 'internal_tool',
    execute: (args, ctx) =>
      outcome(async () => {
        const page = await ops.list(principalOf(ctx), 50, null, typeof args.status === 'string' ? args.status : null);
        return { schedules: page.items.map(summary), more: page.nextCursor !== null };
      }),
  };
}

function updateTool(ops: ScheduleOperations): ExtendedTool {
  return {
    spec: spec(
      'schedule.update',
      'Changes the title, message and/or cadence of a schedule (future occurrences only). Needs approval.',
      {
        schedule_id: ID,
        expected_revision: REVISION,
        title: { type: 'string', minLength: 1, maxLength: 200 },
        message: { type: 'string', minLength: 1, maxLength: 4000 },
        cadence: CADENCE,
      },
      true,
    ),
    trust: 'internal_tool',
    approvalSummary: (args) =>
      `update schedule ${str(args.schedule_id)} (revision ${String(args.expected_revision)})` +
      (args.title !== undefined ? `; title ${JSON.stringify(str(args.title))}` : '') +
      (args.message !== undefined ? `; message ${JSON.stringify(str(args.message).slice(0, 120))}` : '') +
      (args.cadence !== undefined ? `; cadence ${cadencePreview(ops, args.cadence)}` : ''),
    execute: (args, ctx) =>
      outcome(async () => {
        const patch: Record<string, unknown> = {};
        for (const k of ['title', 'message', 'cadence']) if (args[k] !== undefined) patch[k] = args[k];
        const s = await ops.update(
          principalOf(ctx),
          str(args.schedule_id),
          patch,
          Number(args.expected_revision),
          actorOf(ctx),
        );
        return summary(s);
      }),
  };
}

function lifecycleTool(
  ops: ScheduleOperations,
  verb: 'pause' | 'resume' | 'cancel',
  description: string,
): ExtendedTool {
  return {
    spec: spec(`schedule.${verb}`, description, { schedule_id: ID, expected_revision: REVISION }, true),
    trust: 'internal_tool',
    approvalSummary: (args) => `${verb} schedule ${str(args.schedule_id)} (revision ${String(args.expected_revision)})`,
    execute: (args, ctx) =>
      outcome(async () => {
        const [p, id, rev, actor] = [
          principalOf(ctx),
          str(args.schedule_id),
          Number(args.expected_revision),
          actorOf(ctx),
        ];
        const s =
          verb === 'pause'
            ? await ops.pause(p, id, actor, rev)
            : verb === 'resume'
              ? await ops.resume(p, id, actor, rev)
              : await ops.cancel(p, id, 'cancelled in conversation', actor, rev);
        return summary(s);
      }),
  };
}

/** schedule.create, schedule.list, schedule.update, schedule.pause, schedule.resume, schedule.cancel. */
export function createScheduleTools(ops: ScheduleOperations): ExtendedTool[] {
  return [
    createTool(ops),
    listTool(ops),
    updateTool(ops),
    lifecycleTool(ops, 'pause', 'Pauses a schedule: it does not fire until resumed. Needs approval.'),
    lifecycleTool(
      ops,
      'resume',
      'Resumes a paused schedule from its next firing after now (no catch-up). Needs approval.',
    ),
    lifecycleTool(
      ops,
      'cancel',
      'Cancels (deletes) a schedule for good; runs it already started are not cancelled. Needs approval.',
    ),
  ];
}
