import { TASK_STATUSES } from '../context/working-state';
import { FAILURE_REASONS } from '../run/failure';
import { APPROVAL_ACTION_KINDS, TOOL_RESULT_TRUST, type EventType } from './payloads';
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
});

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
  'session.deleted': { currentVersion: 1, schema: obj({ reason: nullable(str()) }) },
  'user.message.created': {
    currentVersion: 2,
    schema: obj({ messageId: uuid(), content: arr(contentPart, { minItems: 1 }) }),
  },
  'run.queued': {
    currentVersion: 1,
    schema: obj({
      agentId: str({ minLength: 1 }),
      agentVersion: int({ minimum: 1 }),
      principalId: str({ minLength: 1 }),
      modelPolicy: str({ minLength: 1 }),
      userMessageId: nullable(uuid()),
      limits,
      priority: int(),
      idempotencyKey: nullable(str({ maxLength: 255 })),
      requestHash: nullable(str()),
    }),
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
  'run.completed': { currentVersion: 1, schema: obj({ messageId: nullable(uuid()) }) },
  'run.failed': {
    currentVersion: 1,
    schema: obj({ reason: oneOfStr(FAILURE_REASONS), message: str(), errorCode: nullable(str()) }),
  },
  'run.cancelled': { currentVersion: 1, schema: obj({ reason: nullable(str()) }) },
  'model.request.started': {
    currentVersion: 3,
    schema: obj({
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
    }),
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
    currentVersion: 1,
    schema: obj({
      invocationId: uuid(),
      step: int({ minimum: 1 }),
      callId: str(),
      toolName: str(),
      toolVersion: nullable(str()),
      arguments: anyObject(),
      argumentsHash: str(),
      idempotencyKey: str(),
    }),
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
  'approval.resolved': {
    currentVersion: 1,
    schema: obj({
      approvalId: uuid(),
      decision: oneOfStr(['approved', 'denied', 'expired']),
      resolvedBy: str(),
      reason: nullable(str()),
    }),
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
    currentVersion: 1,
    schema: obj({
      agentId: str({ minLength: 1 }),
      serverId: str({ minLength: 1 }),
      grant: mcpGrant,
      previous: nullable(mcpGrant),
      revision: int({ minimum: 1 }),
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
};

export function isKnownEventType(t: string): t is EventType {
  return Object.prototype.hasOwnProperty.call(EVENT_CATALOG, t);
}

// Keep `any` referenced for schema authors adding open payloads.
void any;
