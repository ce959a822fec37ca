import { approvalProjection } from './approval-projection';
import { idempotencyProjection } from './idempotency-projection';
import { mcpServerProjection } from './mcp-server-projection';
import { memoryRecordProjection, memoryRetrievalProjection } from './memory-record-projection';
import { modelCallProjection } from './model-call-projection';
import { notificationProjection } from './notification-projection';
import type { Projection } from './projection';
import { runProjection } from './run-projection';
import { scheduleOccurrenceProjection } from './schedule-occurrence-projection';
import { scheduleProjection } from './schedule-projection';
import { sessionProjection } from './session-projection';
import { toolInvocationProjection } from './tool-invocation-projection';

export type { Projection, Row } from './projection';

/** Every inline projection, in the order the append writes them (sessions first: it owns the sequence). */
export const PROJECTIONS: readonly Projection[] = [
  sessionProjection,
  runProjection,
  toolInvocationProjection,
  approvalProjection,
  modelCallProjection,
  idempotencyProjection,
  notificationProjection,
  memoryRecordProjection,
  memoryRetrievalProjection,
  scheduleProjection,
  scheduleOccurrenceProjection,
  mcpServerProjection,
];

export function projectionByName(name: string): Projection | undefined {
  return PROJECTIONS.find((p) => p.name === name);
}
