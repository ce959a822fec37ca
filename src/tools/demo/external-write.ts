import type { ToolSpec } from '../../domain/tools/tool-spec';
import type { DemoWriteLog } from '../../ports/tool-records';
import type { ExtendedTool } from '../tool-extensions';

const SPEC: ToolSpec = {
  name: 'demo.external_write',
  version: '1.0.0',
  description:
    'Sends a message to an external target (a person, team or channel) or publishes it. A demonstration of a ' +
    'consequential action: it always needs human approval and only records what it would have sent.',
  inputSchema: {
    type: 'object',
    properties: {
      target: { type: 'string', minLength: 1, maxLength: 200 },
      text: { type: 'string', minLength: 1, maxLength: 4000 },
      simulated_ack_delay_ms: {
        type: 'integer',
        minimum: 0,
        maximum: 10_000,
        description: 'Test hook: how long the fake service takes to acknowledge.',
      },
    },
    required: ['target', 'text'],
    additionalProperties: false,
  },
  outputSchema: {
    type: 'object',
    properties: {
      recorded: { type: 'boolean' },
      record_id: { type: 'integer' },
      target: { type: 'string' },
      bytes: { type: 'integer' },
    },
    required: ['recorded', 'record_id', 'target', 'bytes'],
    additionalProperties: false,
  },
  sideEffect: 'external_write',
  risk: 'high',
  // The fake service has no idempotency keys: a blind retry would send twice (plan §8.4).
  idempotency: 'non_idempotent',
  requiredScopes: ['tools.use'],
  timeoutSeconds: 20,
  maximumOutputBytes: 1024,
  allowParallel: false,
};

/**
 * `demo.external_write` (plan §8.2): records the write in `demo_external_writes` and calls nothing
 * external. The record is written first and the acknowledgement may be slow (`simulated_ack_delay_ms`),
 * which is exactly the window in which a crash leaves the effect ambiguous.
 */
export function createDemoExternalWriteTool(log: DemoWriteLog): ExtendedTool {
  return {
    spec: SPEC,
    trust: 'internal_tool',
    async execute(args, ctx) {
      const target = String(args.target);
      const text = String(args.text);
      const { id } = await log.record({
        tenantId: ctx.tenantId,
        sessionId: ctx.sessionId,
        runId: ctx.runId,
        invocationId: ctx.invocationId,
        idempotencyKey: ctx.idempotencyKey,
        target,
        content: text,
      });
      const delay = typeof args.simulated_ack_delay_ms === 'number' ? args.simulated_ack_delay_ms : 0;
      if (delay > 0) await ctx.clock.sleep(delay, ctx.signal).catch(() => undefined);
      // Stopped while waiting for the acknowledgement: the write was sent, its outcome is unknown.
      if (ctx.signal.aborted)
        return {
          ok: false,
          errorCode: 'acknowledgement_lost',
          message: 'stopped before the service acknowledged the write',
          retryable: false,
        };
      return { ok: true, output: { recorded: true, record_id: id, target, bytes: Buffer.byteLength(text) } };
    },
  };
}
