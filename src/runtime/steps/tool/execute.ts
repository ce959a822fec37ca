import type { ToolResult } from '../../../domain/tools/tool-spec';
import type { Authorized } from './authorize';
import type { CallScope } from './call-scope';

/**
 * Step 8's execution: the tool runs with its timeout and the worker's stop signal; a timeout or a
 * throw becomes a failed result (`tool_timeout`, `tool_execution_error`), never an exception.
 */
export async function execute(s: CallScope, a: Authorized): Promise<ToolResult> {
  const { ctx, call, p } = s;
  const { timeoutSeconds } = a.tool.spec;
  const controller = new AbortController();
  const onAbort = () => controller.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  // An already-aborted signal never fires `abort` again.
  if (ctx.signal.aborted) onAbort();
  const timer = setTimeout(() => controller.abort(new Error('timeout')), timeoutSeconds * 1000);
  try {
    const timeout = new Promise<ToolResult>((resolve) =>
      controller.signal.addEventListener(
        'abort',
        () =>
          resolve({
            ok: false,
            errorCode: 'tool_timeout',
            message: `${call.name} did not finish within ${timeoutSeconds}s`,
            retryable: true,
          }),
        { once: true },
      ),
    );
    const running = a.tool.execute(a.args, {
      runId: ctx.runId,
      sessionId: ctx.sessionId,
      tenantId: ctx.principal.tenantId,
      principalId: ctx.principal.principalId,
      invocationId: s.invocationId,
      idempotencyKey: s.key,
      clock: p.clock,
      signal: controller.signal,
      deadlineAt: ctx.deadlineAt ?? null,
      agent: ctx.agent,
      ...(s.callTool ? { callTool: s.callTool } : {}),
    });
    return await Promise.race([running, timeout]);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    return { ok: false, errorCode: 'tool_execution_error', message, retryable: false };
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onAbort);
  }
}
