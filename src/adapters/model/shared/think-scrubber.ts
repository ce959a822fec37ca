import { TagSplitter } from './tag-splitter';

/** The in-band reasoning tags open models emit (Qwen, DeepSeek-R1 and friends, Hermes variants). */
export const THINK_TAGS = ['think', 'thinking', 'reasoning'];

/**
 * Boundary-gated streaming `<think>` scrubber (plan §10.6): reasoning emitted in-band before the
 * answer is separated from the visible text; a mention of "<think>" inside prose is left alone;
 * leading blank lines after a reasoning block are trimmed from the answer.
 */
export class ThinkScrubber {
  private readonly splitter = new TagSplitter(THINK_TAGS, 'start');
  private visibleStarted = false;

  push(chunk: string): { text: string; reasoning: string } {
    return this.collect(this.splitter.push(chunk));
  }

  end(): { text: string; reasoning: string } {
    return this.collect(this.splitter.end());
  }

  private collect(pieces: ReturnType<TagSplitter['push']>): { text: string; reasoning: string } {
    let text = '';
    let reasoning = '';
    for (const p of pieces) {
      if (p.type === 'inside') reasoning += p.text;
      else if (p.type === 'outside') text += p.text;
    }
    if (!this.visibleStarted) {
      text = text.replace(/^\s+/, '');
      if (text !== '') this.visibleStarted = true;
    }
    return { text, reasoning };
  }
}
