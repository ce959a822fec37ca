import { TASK_STATUSES } from '../context/working-state';
import { FALLBACK_REASONS } from '../model/fallback';
import { FAILURE_REASONS } from '../run/failure';
import { INTERRUPT_MODES, MULTITASK_STRATEGIES } from '../run/multitask';
import { MEMORY_EVENT_CATALOG } from './memory-events';
import { APPROVAL_ACTION_KINDS, TOOL_RESULT_TRUST, type EventType } from './payloads';
import { CADENCE_KINDS, WEEKDAYS } from '../schedules/cadence';
import { MISFIRE_POLICIES, OCCURRENCE_FAILURE_REASONS } from '../schedules/schedule';
import {
  any,
  anyObject,
  arr,
  bool,
  int,
  nullable,
  num,
  obj,
  oneOfStr,
  str,
  uuid,
  type JsonSchema,
} from './schema-builders';

const tokenUsage = obj({
  uncachedInputTokens: int({ minimum: 0 }),
  cachedInputTokens: int({ minimum: 0 }),
  cacheWriteTokens: int({ minimum: 0 }),
  outputTokens: int({ minimum: 0 }),
  reasoningTokens: int({ minimum: 0 }),
});
const decimal = str({ pattern: '^-?[0-9]+(\\.[0-9]+)?(e[-+]?[0-9]+)?$' });
const contentPart: JsonSchema = {
  anyOf: [
    obj({ type: oneOfStr(['text']), text: str() }),
    obj({ type: oneOfStr(['artifact_ref']), artifactId: uuid(), mediaType: str() }),
  ],
};
const limits = obj({
  maxSteps: int({ minimum: 1 }),
  maxModelCalls: int({ minimum: 1 }),
  maxToolCalls: int({ minimum: 0 }),
  maxInputTokens: nullable(int({ minimum: 1 })),
  maxOutputTokens: nullable(int({ minimum: 1 })),
  maxCost: nullable(decimal),
  deadlineSeconds: nullable(num()),
});
const stopReasons = ['end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'incomplete', 'content_filter'];
const costSources = [
  'provider_response',
  'provider_usage_api',
  'catalog_price',
  'pricing_snapshot',
  'config_override',
  'free',
];

const count = int({ minimum: 0 });
const contextBuild = obj({
  limit: nullable(int({ minimum: 1 })),
  total: count,
  estimator: str(),
  tokens: obj({
    platform: count,
    agent: count,
    tools: count,
    workingState: count,
    retrieved: count,
    summary: count,
    history: count,
    reserveOutput: count,
  }),
  prefixEpoch: int({ minimum: 1 }),
  compactions: count,
  historyItems: count,
});
const workingState = obj({
  objective: nullable(str()),
  constraints: arr(str()),
  tasks: arr(obj({ description: str(), status: oneOfStr(TASK_STATUSES) })),
  establishedFacts: arr(obj({ statement: str(), sourceSequence: nullable(int({ minimum: 1 })) })),
  openQuestions: arr(str()),
  nextAction: nullable(str()),
});
const grantDecision = oneOfStr(['allow', 'deny']);
const mcpGrant = obj({
  default: grantDecision,
  tools: { type: 'object', additionalProperties: grantDecision },
  // per tool, per argument: a JSON Schema (an object; validated as a schema when the grant is made)
  rules: { type: 'object', additionalProperties: { type: 'object', additionalProperties: { type: 'object' } } },
});

const isoInstant = str({ minLength: 20, maxLength: 40 });
const cadence: JsonSchema = {
  type: 'object',
  required: ['kind', 'timeZone'],
  properties: {
    kind: oneOfStr(CADENCE_KINDS),
    timeZone: str({ minLength: 1, maxLength: 100 }),
    at: str(),
    time: str(),
    days: arr(oneOfStr(WEEKDAYS), { minItems: 1 }),
    day: { anyOf: [int({ minimum: 1, maximum: 31 }), oneOfStr(['last'])] },
    month: int({ minimum: 1, maximum: 12 }),
    expression: str({ maxLength: 200 }),
  },
  additionalProperties: false,
};
const scheduleDefinition = obj({
  title: str({ minLength: 1, maxLength: 200 }),
  message: str({ minLength: 1 }),
  cadence,
  agentId: str({ minLength: 1 }),
  agentVersion: int({ minimum: 1 }),
  scopes: arr(str({ minLength: 1 })),
  limits,
  misfire: oneOfStr(MISFIRE_POLICIES),
  maxConsecutiveFailures: int({ minimum: 1 }),
});
const occurrence = { occurrenceId: uuid(), nominalAt: isoInstant, revision: int({ minimum: 1 }) };

export interface CatalogEntry {
  /** The schema version new events of this type are written with. */
  readonly currentVersion: number;
  /** JSON Schema of the current payload shape; validated on append. */
  readonly schema: JsonSchema;
}

/**
 * The closed catalog of persisted event types (plan §6.8). Appending a type not listed here is refused.
 * Bump `currentVersion` and add an upcaster whenever a payload shape changes.
 */
export const EVENT_CATALOG: { readonly [K in EventType]: CatalogEntry } = {
  'session.created': {
    currentVersion: 1,
    schema: obj({
      agentId: str({ minLength: 1 }),
      agentVersion: int({ minimum: 1 }),
      principalId: str({ minLength: 1 }),
      title: nullable(str({ maxLength: 500 })),
      metadata: anyObject(),
    }),
  },
  'session.forked': {
    currentVersion: 1,
    schema: obj({
      agentId: str({ minLength: 1 }),
      agentVersion: int({ minimum: 1 }),
      principalId: str({ minLength: 1 }),
      title: nullable(str({ maxLength: 500 })),
      metadata: anyObject(),
      parentSessionId: uuid(),
      parentSequence: int({ minimum: 1 }),
      atSequence: int({ minimum: 1 }),
      replacedMessageId: nullable(uuid()),
    }),
  },
  'session.title.changed': {
    currentVersion: 1,
    schema: obj({ title: str({ minLength: 1, maxLength: 500 }), source: oneOfStr(['first_message', 'user']) }),
  },
  'session.deleted': { currentVersion: 1, schema: obj({ reason: nullable(str()) }) },
  'user.message.created': {
    currentVersion: 2,
    schema: obj({ messageId: uuid(), content: arr(contentPart, { minItems: 1 }) }),
  },
  'run.queued': {
    // v2: `scopes`, the run's recorded scope set (ADR 0032); required, so no run is queued without one.
    // v3: `queuedBehind`, `multitaskStrategy` (issue 33: a message queued behind a working run), both
    // optional on append, so a v2-shaped payload still validates (read back as null).
    // v4: `scheduleId` (issue 31: the schedule whose occurrence queued it), optional on append and
    // written only for a scheduled run; v3 upcasts to null.
    currentVersion: 4,
    schema: (() => {
      const v2 = obj({
        agentId: str({ minLength: 1 }),
        agentVersion: int({ minimum: 1 }),
        principalId: str({ minLength: 1 }),
        modelPolicy: str({ minLength: 1 }),
        userMessageId: nullable(uuid()),
        limits,
        priority: int(),
        idempotencyKey: nullable(str({ maxLength: 255 })),
        requestHash: nullable(str()),
        scopes: arr(str({ minLength: 1, maxLength: 100 }), { maxItems: 200, uniqueItems: true }),
      });
      const v3 = { queuedBehind: nullable(uuid()), multitaskStrategy: nullable(oneOfStr(MULTITASK_STRATEGIES)) };
      return { ...v2, properties: { ...(v2.properties as object), ...v3, scheduleId: nullable(uuid()) } };
    })(),
  },
  'run.claimed': {
    currentVersion: 1,
    schema: obj({ workerId: str({ minLength: 1 }), leaseEpoch: int({ minimum: 1 }), attempt: int({ minimum: 1 }) }),
  },
  'run.started': {
    currentVersion: 2,
    // v2: `spanId` (optional on append, so a v1-shaped payload still validates; upcast to null).
    schema: (() => {
      const v1 = obj({ attempt: int({ minimum: 1 }), deadlineAt: nullable(str()), traceId: nullable(str()) });
      return { ...v1, properties: { ...(v1.properties as object), spanId: nullable(str()) } };
    })(),
  },
  'run.consent_stamped': {
    currentVersion: 1,
    schema: obj({
      principalId: str({ minLength: 1 }),
      trajectoryExport: oneOfStr(['granted', 'withdrawn', 'absent']),
      consentVersion: nullable(int({ minimum: 1 })),
    }),
  },
  'run.released': { currentVersion: 1, schema: obj({ workerId: str(), reason: str() }) },
  'run.checkpointed': {
    currentVersion: 1,
    schema: obj({ checkpointVersion: int({ minimum: 1 }), step: int({ minimum: 0 }) }),
  },
  'run.cancel_requested': { currentVersion: 1, schema: obj({ reason: nullable(str()) }) },
  'run.waiting_for_approval': { currentVersion: 1, schema: obj({ approvalId: uuid() }) },
  'run.waiting_for_user': { currentVersion: 1, schema: obj({ questionId: uuid(), question: str() }) },
  'run.resumed': { currentVersion: 1, schema: obj({ reason: str() }) },
  'run.waiting_for_children': {
    currentVersion: 1,
    schema: obj({ invocationId: uuid(), children: arr(obj({ runId: uuid(), sessionId: uuid() }), { minItems: 1 }) }),
  },
  'run.delegated': {
    currentVersion: 1,
    schema: obj({
      parentRunId: uuid(),
      parentSessionId: uuid(),
      invocationId: uuid(),
      briefIndex: int({ minimum: 0 }),
      tools: arr(str({ minLength: 1 })),
      scopes: arr(str({ minLength: 1 })),
      deadlineAt: nullable(str()),
      parentTrace: nullable(obj({ traceId: str(), spanId: str() })),
    }),
  },
  'run.children_joined': {
    currentVersion: 1,
    schema: obj({
      invocationId: uuid(),
      children: arr(
        obj({
          runId: uuid(),
          // `interrupted`: a newer message of the child's own session stopped it (issue 33).
          status: oneOfStr(['completed', 'failed', 'cancelled', 'interrupted']),
          usage: obj({
            ...(tokenUsage.properties as Record<string, JsonSchema>),
            modelCalls: int({ minimum: 0 }),
            toolCalls: int({ minimum: 0 }),
            cost: decimal,
          }),
        }),
        { minItems: 1 },
      ),
    }),
  },
  'consensus.round_started': {
    currentVersion: 1,
    schema: obj({
      roundId: uuid(),
      round: int({ minimum: 1 }),
      role: oneOfStr(['engine', 'synthesizer']),
      question: str(),
      quorum: int({ minimum: 1 }),
      samples: arr(
        obj({
          slot: int({ minimum: 0 }),
          engine: str({ minLength: 1 }),
          attempt: int({ minimum: 1 }),
          runId: uuid(),
          sessionId: uuid(),
        }),
        { minItems: 1 },
      ),
    }),
  },
  'consensus.proposal_received': {
    currentVersion: 1,
    schema: obj({
      roundId: uuid(),
      slot: int({ minimum: 0 }),
      engine: str({ minLength: 1 }),
      attempt: int({ minimum: 1 }),
      runId: uuid(),
      sessionId: uuid(),
      text: str(),
    }),
  },
  'consensus.proposal_failed': {
    currentVersion: 1,
    schema: obj({
      roundId: uuid(),
      role: oneOfStr(['engine', 'synthesizer']),
      slot: int({ minimum: 0 }),
      engine: str({ minLength: 1 }),
      attempt: int({ minimum: 1 }),
      runId: uuid(),
      status: oneOfStr(['completed', 'failed', 'cancelled', 'interrupted']),
      error: str(),
    }),
  },
  'consensus.synthesized': {
    currentVersion: 1,
    schema: obj({
      roundId: uuid(),
      runId: uuid(),
      sessionId: uuid(),
      synthesizer: str({ minLength: 1 }),
      text: str(),
      proposals: arr(uuid()),
    }),
  },
  // v2 (both): `scheduleId`, a scheduled run's schedule (issue 31: its notification); optional on
  // append and written only for a scheduled run; v1 upcasts to null.
  'run.completed': {
    currentVersion: 2,
    schema: (() => {
      const v1 = obj({ messageId: nullable(uuid()) });
      return { ...v1, properties: { ...(v1.properties as object), scheduleId: nullable(uuid()) } };
    })(),
  },
  'run.failed': {
    currentVersion: 2,
    schema: (() => {
      const v1 = obj({ reason: oneOfStr(FAILURE_REASONS), message: str(), errorCode: nullable(str()) });
      return { ...v1, properties: { ...(v1.properties as object), scheduleId: nullable(uuid()) } };
    })(),
  },
  'run.cancelled': { currentVersion: 1, schema: obj({ reason: nullable(str()) }) },
  'run.interrupt_requested': {
    currentVersion: 1,
    schema: obj({ byRunId: uuid(), mode: oneOfStr(INTERRUPT_MODES), reason: nullable(str()) }),
  },
  'run.interrupted': {
    currentVersion: 1,
    schema: obj({ byRunId: uuid(), mode: oneOfStr(INTERRUPT_MODES), reason: nullable(str()) }),
  },
  // Right before a `rollback`'s run.interrupted: the run's events after its user message are hidden
  // from the context of later runs (the log keeps them; the range is the run's own events).
  'run.rolled_back': { currentVersion: 1, schema: obj({ byRunId: uuid(), reason: nullable(str()) }) },
  'model.request.started': {
    // v4: `fallbackFrom` (fallback models, issue 33, ADR 0046); optional on append, so a v3-shaped
    // payload still validates; v3 calls upcast to `fallbackFrom: null`. The run loop always writes it.
    currentVersion: 4,
    schema: (() => {
      const v3 = obj({
        modelCallId: uuid(),
        step: int({ minimum: 1 }),
        attempt: int({ minimum: 1 }),
        provider: str(),
        model: str(),
        prefixHash: str(),
        profileName: nullable(str({ minLength: 1 })),
        profileVersion: nullable(int({ minimum: 1 })),
        registryVersion: nullable(str({ minLength: 1 })),
        context: nullable(contextBuild),
      });
      const fallbackFrom = nullable(
        obj({ provider: str({ minLength: 1 }), model: str({ minLength: 1 }), reason: oneOfStr(FALLBACK_REASONS) }),
      );
      return { ...v3, properties: { ...(v3.properties as object), fallbackFrom } };
    })(),
  },
  'model.response.completed': {
    currentVersion: 1,
    schema: obj({
      modelCallId: uuid(),
      step: int({ minimum: 1 }),
      attempt: int({ minimum: 1 }),
      stopReason: oneOfStr(stopReasons),
      usage: tokenUsage,
      cost: decimal,
      costSource: oneOfStr(costSources),
      toolCalls: arr(obj({ callId: str(), name: str() })),
      textLength: int({ minimum: 0 }),
      latencyMs: int({ minimum: 0 }),
    }),
  },
  'model.request.failed': {
    currentVersion: 1,
    schema: obj({
      modelCallId: uuid(),
      step: int({ minimum: 1 }),
      attempt: int({ minimum: 1 }),
      errorCode: str(),
      message: str(),
      retryable: bool(),
      latencyMs: int({ minimum: 0 }),
    }),
  },
  'assistant.message.completed': { currentVersion: 1, schema: obj({ messageId: uuid(), text: str() }) },
  'tool.call.proposed': {
    currentVersion: 2,
    // v2: `via` and `parentInvocationId`, present only on a call a program made through the tool
    // bridge (optional on append, so a model's call keeps the v1 shape; v1 upcasts unchanged).
    schema: (() => {
      const v1 = obj({
        invocationId: uuid(),
        step: int({ minimum: 1 }),
        callId: str(),
        toolName: str(),
        toolVersion: nullable(str()),
        arguments: anyObject(),
        argumentsHash: str(),
        idempotencyKey: str(),
      });
      const bridged = { via: oneOfStr(['bridge']), parentInvocationId: uuid() };
      return { ...v1, properties: { ...(v1.properties as object), ...bridged } };
    })(),
  },
  'tool.call.authorized': {
    currentVersion: 1,
    schema: obj({ invocationId: uuid(), decision: str(), reasonCode: str(), policyVersion: str() }),
  },
  'tool.call.denied': {
    currentVersion: 1,
    schema: obj({ invocationId: uuid(), reasonCode: str(), explanation: str(), policyVersion: str() }),
  },
  'tool.call.started': { currentVersion: 1, schema: obj({ invocationId: uuid() }) },
  'tool.call.effect_started': { currentVersion: 1, schema: obj({ invocationId: uuid() }) },
  'tool.call.completed': {
    currentVersion: 2,
    schema: obj({
      invocationId: uuid(),
      result: anyObject(),
      truncated: bool(),
      latencyMs: int({ minimum: 0 }),
      trust: oneOfStr(TOOL_RESULT_TRUST),
    }),
  },
  'tool.call.failed': {
    currentVersion: 1,
    schema: obj({
      invocationId: uuid(),
      errorCode: str(),
      message: str(),
      retryable: bool(),
      latencyMs: int({ minimum: 0 }),
    }),
  },
  'tool.call.uncertain': { currentVersion: 1, schema: obj({ invocationId: uuid(), reason: str() }) },
  'tool.call.suspended': {
    currentVersion: 1,
    schema: obj({ invocationId: uuid(), reason: str(), awaitingInvocationId: uuid(), approvalId: uuid() }),
  },
  'approval.requested': {
    currentVersion: 2,
    schema: obj({
      approvalId: uuid(),
      actionKind: oneOfStr(APPROVAL_ACTION_KINDS),
      principalId: str({ minLength: 1 }),
      invocationId: nullable(uuid()),
      toolName: str(),
      arguments: anyObject(),
      actionSummary: str(),
      policyReason: str(),
      risk: str(),
      expiresAt: nullable(str()),
      policyVersion: str(),
    }),
  },
  'approval.expiring': {
    currentVersion: 1,
    schema: obj({
      approvalId: uuid(),
      principalId: str({ minLength: 1 }),
      toolName: str(),
      expiresAt: str(),
      leadSeconds: int({ minimum: 1 }),
    }),
  },
  'approval.resolved': {
    // v2: `edit` (approve with edits, issue 33; optional on append, so a v1-shaped payload still
    // validates; v1 resolutions upcast to `edit: null`). The deciders always write it.
    currentVersion: 2,
    schema: (() => {
      const v1 = obj({
        approvalId: uuid(),
        decision: oneOfStr(['approved', 'denied', 'expired']),
        resolvedBy: str(),
        reason: nullable(str()),
      });
      const edit = nullable(
        obj({
          invocationId: uuid(),
          originalArgumentsHash: str({ pattern: '^[0-9a-f]{64}$' }),
          editedArgumentsHash: str({ pattern: '^[0-9a-f]{64}$' }),
          editedArguments: anyObject(),
          editedBy: str({ minLength: 1 }),
        }),
      );
      return { ...v1, properties: { ...(v1.properties as object), edit } };
    })(),
  },
  'context.compacted': {
    currentVersion: 1,
    schema: obj({
      compactionId: uuid(),
      step: int({ minimum: 0 }),
      compactor: oneOfStr(['extractive', 'model_assisted']),
      fallbackReason: nullable(str()),
      summary: obj({
        goal: nullable(str()),
        constraints: arr(str()),
        unresolvedQuestions: arr(str()),
        toolResults: arr(obj({ toolName: str(), excerpt: str(), sourceSequence: int({ minimum: 1 }) })),
        dialogue: arr(
          obj({ role: oneOfStr(['user', 'assistant']), excerpt: str(), sourceSequence: int({ minimum: 1 }) }),
        ),
        elidedSpans: int({ minimum: 0 }),
      }),
      workingState,
      sourceSequences: arr(int({ minimum: 1 }), { minItems: 1 }),
      coveredThroughSequence: int({ minimum: 1 }),
      tokensBefore: int({ minimum: 0 }),
      tokensAfter: int({ minimum: 0 }),
    }),
  },
  'artifact.created': {
    currentVersion: 2,
    schema: obj({
      artifactId: uuid(),
      name: str({ minLength: 1, maxLength: 255 }),
      mediaType: str(),
      sha256: str({ pattern: '^[0-9a-f]{64}$' }),
      sizeBytes: int({ minimum: 0 }),
      source: str({ minLength: 1 }),
      expiresAt: nullable(str()),
    }),
  },
  'agent.mcp_grant.replaced': {
    currentVersion: 2,
    schema: obj({
      agentId: str({ minLength: 1 }),
      serverId: str({ minLength: 1 }),
      grant: mcpGrant,
      previous: nullable(mcpGrant),
      revision: int({ minimum: 1 }),
    }),
  },
  'mcp.server.added': {
    currentVersion: 1,
    schema: obj({
      serverId: str({ pattern: '^[a-z][a-z0-9_]{0,31}$' }),
      entry: anyObject(),
      revision: int({ minimum: 1 }),
    }),
  },
  'mcp.server.updated': {
    currentVersion: 1,
    schema: obj({
      serverId: str({ pattern: '^[a-z][a-z0-9_]{0,31}$' }),
      entry: anyObject(),
      changed: arr(str({ minLength: 1 })),
      origin: oneOfStr(['yaml', 'api']),
      revision: int({ minimum: 1 }),
    }),
  },
  'mcp.server.removed': {
    currentVersion: 1,
    schema: obj({
      serverId: str({ pattern: '^[a-z][a-z0-9_]{0,31}$' }),
      origin: oneOfStr(['yaml', 'api']),
      revision: int({ minimum: 1 }),
    }),
  },
  'schedule.created': {
    currentVersion: 1,
    schema: obj({
      revision: int({ minimum: 1 }),
      principalId: str({ minLength: 1 }),
      definition: scheduleDefinition,
      nextFireAt: nullable(isoInstant),
    }),
  },
  'schedule.updated': {
    currentVersion: 1,
    schema: obj({
      revision: int({ minimum: 2 }),
      definition: scheduleDefinition,
      changed: arr(str()),
      nextFireAt: nullable(isoInstant),
    }),
  },
  'schedule.paused': {
    currentVersion: 1,
    schema: obj({ reason: oneOfStr(['requested', 'consecutive_failures']), detail: nullable(str()) }),
  },
  'schedule.resumed': { currentVersion: 1, schema: obj({ nextFireAt: nullable(isoInstant) }) },
  'schedule.cancelled': { currentVersion: 1, schema: obj({ reason: nullable(str({ maxLength: 1000 })) }) },
  'schedule.occurrence.fired': {
    currentVersion: 1,
    schema: obj({
      ...occurrence,
      sessionId: uuid(),
      runId: uuid(),
      missedCount: int({ minimum: 0 }),
      nextFireAt: nullable(isoInstant),
    }),
  },
  'schedule.occurrence.skipped': {
    currentVersion: 1,
    schema: obj({
      ...occurrence,
      status: oneOfStr(['skipped_overlap', 'missed']),
      activeRunId: nullable(uuid()),
      missedCount: int({ minimum: 0 }),
      nextFireAt: nullable(isoInstant),
    }),
  },
  'schedule.occurrence.failed': {
    // v2: `principalId`, the schedule's owner (the notification's recipient, issue 31); optional on
    // append, so a v1-shaped payload still validates (read back as null).
    currentVersion: 2,
    schema: (() => {
      const v1 = obj({
        ...occurrence,
        reason: oneOfStr(OCCURRENCE_FAILURE_REASONS),
        message: str(),
        consecutiveFailures: int({ minimum: 1 }),
        nextFireAt: nullable(isoInstant),
      });
      return { ...v1, properties: { ...(v1.properties as object), principalId: nullable(str({ minLength: 1 })) } };
    })(),
  },
  'notification.posted': {
    currentVersion: 1,
    schema: obj({
      principalId: str({ minLength: 1, maxLength: 200 }),
      kind: str({ minLength: 1 }),
      summary: { type: 'object', additionalProperties: str({ maxLength: 500 }), required: ['title'] },
      links: { type: 'object', additionalProperties: str({ maxLength: 2000 }) },
      idempotencyKey: str({ minLength: 1, maxLength: 255 }),
    }),
  },
  'run.skill.loaded': {
    currentVersion: 1,
    schema: obj({
      invocationId: uuid(),
      name: str({ minLength: 1 }),
      version: str({ minLength: 1 }),
      sha256: str({ pattern: '^[0-9a-f]{64}$' }),
      source: oneOfStr(['package', 'mcp_prompt']),
      missingTools: arr(str()),
    }),
  },
  // Long-term memory (issue 30, ADR 0035).
  ...MEMORY_EVENT_CATALOG,
};

export function isKnownEventType(t: string): t is EventType {
  return Object.prototype.hasOwnProperty.call(EVENT_CATALOG, t);
}

// Keep `any` referenced for schema authors adding open payloads.
void any;
