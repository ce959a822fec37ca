import type { ToolResult } from '../../../domain/tools/tool-spec';
import type { ToolProgressReport } from '../../../ports/tool';
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
  const progress = progressReporter(s, () => p.clock.nowMs());
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
      ...(p.transient ? { progress: progress.report } : {}),
    });
    const result = await Promise.race([running, timeout]);
    // One turn of the event loop: a progress notification received with the result is reported first.
    await new Promise((r) => setImmediate(r));
    await progress.flush();
    return result;
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    return { ok: false, errorCode: 'tool_execution_error', message, retryable: false };
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onAbort);
  }
}

/** The shortest gap between two published progress reports of one call; a call's last report always goes out. */
export const PROGRESS_MIN_INTERVAL_MS = 100;

/** How long a finished call waits for its progress frames still being sent (they then precede its result). */
const PROGRESS_FLUSH_MS = 1000;

/**
 * A call's progress reports as transient `tool.call.progress` frames (ADR 0048): a lost frame is not
 * retried, and a provider reporting faster than every PROGRESS_MIN_INTERVAL_MS is thinned (the
 * report that completes the total always goes out). `flush` waits (bounded) for the frames still
 * being sent, so the stream shows them before the call's result.
 */
function progressReporter(
  s: CallScope,
  nowMs: () => number,
): { report: (r: ToolProgressReport) => void; flush: () => Promise<void> } {
  let last = -Infinity;
  const sending = new Set<Promise<void>>();
  const report = (r: ToolProgressReport) => {
    const now = nowMs();
    const final = r.total !== null && r.progress >= r.total;
    if (!s.p.transient || (!final && now - last < PROGRESS_MIN_INTERVAL_MS)) return;
    last = now;
    const sent = s.p.transient
      .progress({
        sessionId: s.ctx.sessionId,
        runId: s.ctx.runId,
        invocationId: s.invocationId,
        toolName: s.call.name,
        progress: r.progress,
        total: r.total,
        message: r.message,
      })
      .catch(() => undefined);
    sending.add(sent);
    void sent.then(() => sending.delete(sent));
  };
  const flush = async () => {
    if (sending.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((r) => (timer = setTimeout(r, PROGRESS_FLUSH_MS)));
    await Promise.race([Promise.all(sending), bound]);
    clearTimeout(timer);
  };
  return { report, flush };
}
