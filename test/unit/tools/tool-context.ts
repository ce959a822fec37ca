import type { Clock } from '../../../src/ports/clock';
import type { ToolExecutionContext } from '../../../src/ports/tool';

/** A clock frozen at one instant; `sleep` resolves immediately because no tool here waits. */
export function fixedClock(epochMs: number): Clock {
  return {
    nowMs: () => epochMs,
    nowIso: () => new Date(epochMs).toISOString(),
    sleep: () => Promise.resolve(),
  };
}

/** A ToolExecutionContext with fixed identifiers and the given clock. */
export function toolContext(clock: Clock = fixedClock(Date.UTC(2026, 0, 1))): ToolExecutionContext {
  return {
    runId: 'run-1',
    sessionId: 'session-1',
    tenantId: 'tenant-1',
    principalId: 'principal-1',
    invocationId: 'invocation-1',
    idempotencyKey: 'idempotency-1',
    clock,
    signal: new AbortController().signal,
  };
}
