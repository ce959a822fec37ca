import type { StoredEvent } from '../domain/events/payloads';

const clip = (s: string, n = 100) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** One readable line per event for the terminal; a child run's (`child`: its number) indented under its parent. */
export function formatEvent(e: StoredEvent, child: number | null = null): string {
  const detail = ((): string => {
    switch (e.type) {
      case 'run.claimed':
        return `worker ${e.data.workerId} (attempt ${e.data.attempt})`;
      case 'run.started':
        return `attempt ${e.data.attempt}`;
      case 'model.request.started':
        return `step ${e.data.step} · ${e.data.provider}:${e.data.model} · attempt ${e.data.attempt}${
          e.data.fallbackFrom
            ? ` · fallback from ${e.data.fallbackFrom.provider}:${e.data.fallbackFrom.model} (${e.data.fallbackFrom.reason})`
            : ''
        }`;
      case 'model.response.completed': {
        const u = e.data.usage;
        const calls = e.data.toolCalls.length ? ` · ${e.data.toolCalls.map((c) => c.name).join(', ')}` : '';
        return `step ${e.data.step} · ${e.data.stopReason}${calls} · ${u.uncachedInputTokens + u.cachedInputTokens} in / ${u.outputTokens} out tokens · ${e.data.latencyMs} ms`;
      }
      case 'model.request.failed':
        return `step ${e.data.step} attempt ${e.data.attempt} · ${e.data.errorCode}: ${clip(e.data.message)}${e.data.retryable ? ' (retryable)' : ''}`;
      case 'tool.call.proposed':
        return `${e.data.toolName} ${clip(JSON.stringify(e.data.arguments))}`;
      case 'tool.call.authorized':
        return `${e.data.decision} (${e.data.reasonCode})`;
      case 'tool.call.denied':
        return `${e.data.reasonCode}: ${clip(e.data.explanation)}`;
      case 'tool.call.completed':
        return `${clip(JSON.stringify(e.data.result))} · ${e.data.latencyMs} ms`;
      case 'tool.call.failed':
        return `${e.data.errorCode}: ${clip(e.data.message)}`;
      case 'run.checkpointed':
        return `step ${e.data.step} (checkpoint ${e.data.checkpointVersion})`;
      case 'run.failed':
        return `${e.data.reason}: ${e.data.message}`;
      case 'run.cancelled':
        return e.data.reason ?? '';
      case 'assistant.message.completed':
        return `${e.data.text.length} chars`;
      case 'artifact.created':
        return `${e.data.name} · artifact ${e.data.artifactId} · ${e.data.sizeBytes} bytes · sha256 ${e.data.sha256}`;
      default:
        return delegationDetail(e);
    }
  })();
  const indent = child === null ? '  ' : `      child ${child} │ `;
  return `${indent}${e.type.padEnd(28)} ${detail}`.trimEnd();
}

/** The detail of a delegate.run event (ADR 0037), '' for any other. */
function delegationDetail(e: StoredEvent): string {
  switch (e.type) {
    case 'run.waiting_for_children':
      return `${e.data.children.length} child run(s): ${e.data.children.map((c) => c.runId).join(', ')}`;
    case 'run.delegated':
      return `child of run ${e.data.parentRunId} · brief ${e.data.briefIndex + 1} · tools ${e.data.tools.join(', ') || '(none)'}`;
    case 'run.children_joined':
      return e.data.children.map((c, i) => `${i + 1}: ${c.status}`).join(' · ');
    default:
      return consensusDetail(e);
  }
}

/** The detail of a consensus event (ADR 0047), '' for any other. */
function consensusDetail(e: StoredEvent): string {
  switch (e.type) {
    case 'consensus.round_started':
      return `round ${e.data.round} · ${e.data.role} · ${e.data.samples.map((s) => `${s.engine}#${s.attempt}`).join(', ')}`;
    case 'consensus.proposal_received':
      return `engine ${e.data.slot + 1} (${e.data.engine}) sample ${e.data.attempt}: ${clip(e.data.text)}`;
    case 'consensus.proposal_failed':
      return `${e.data.role} ${e.data.slot + 1} (${e.data.engine}) sample ${e.data.attempt}: ${e.data.status} · ${clip(e.data.error)}`;
    case 'consensus.synthesized':
      return `${e.data.synthesizer} over ${e.data.proposals.length} proposal(s): ${clip(e.data.text)}`;
    default:
      return '';
  }
}
