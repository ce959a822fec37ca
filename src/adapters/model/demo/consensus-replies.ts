import { extractArithmeticExpression } from './arithmetic-question';
import { parseTimeQuestion } from './time-question';

const MAX_QUOTED_CHARS = 200;

/**
 * The demo model as a consensus engine or synthesizer (ADR 0047), recognized by the messages the
 * consensus step writes (domain/consensus/progress.ts): an engine proposes a one-line answer naming
 * what it would compute; the synthesizer quotes every proposal and names the engines without one.
 * Null for any other message. Pure.
 */
export function consensusReply(message: string): string | null {
  const engine = /^Consensus engine (\d+) of \d+(?:, sample (\d+))?\./.exec(message);
  if (engine) return engineProposal(Number(engine[1]), engine[2] ? Number(engine[2]) : 1, questionOf(message));
  if (message.startsWith('Consensus synthesis')) return synthesis(message);
  return null;
}

function questionOf(message: string): string {
  const block = message.split('\n\n').find((b) => b.startsWith('Question: '));
  return block ? block.slice('Question: '.length).trim() : '';
}

function engineProposal(engine: number, sample: number, question: string): string {
  const expression = extractArithmeticExpression(question);
  const time = parseTimeQuestion(question);
  const core =
    expression !== null
      ? `the answer is the value of ${expression}`
      : time !== null
        ? `the answer is the current time${time.timezone ? ` in ${time.timezone}` : ''}, read from a clock`
        : `a direct, concise answer to "${clip(question)}"`;
  return `Engine ${engine}${sample > 1 ? ` (sample ${sample})` : ''} proposes: ${core}.`;
}

function synthesis(message: string): string {
  const blocks = message.split('\n\n');
  const proposals = blocks.flatMap((b) => {
    const m = /^Proposal \d+ \(engine (\d+), ([^)]*)\): ([\s\S]*)$/.exec(b);
    return m ? [`engine ${m[1]} (${m[2]}) said "${clip(m[3].trim())}"`] : [];
  });
  const missing = blocks.find((b) => b.startsWith('Engines without a proposal: '));
  const none = missing ? `; no proposal from ${missing.slice('Engines without a proposal: '.length)}` : '';
  return `Consensus of ${proposals.length} proposal(s) on "${clip(questionOf(message))}": ${proposals.join('; ')}${none}.`;
}

function clip(text: string): string {
  return text.length > MAX_QUOTED_CHARS ? `${text.slice(0, MAX_QUOTED_CHARS)}...` : text;
}
