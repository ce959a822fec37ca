/**
 * A streaming splitter for in-band tagged regions (`<think>…</think>`, `<tool_call>…</tool_call>`)
 * whose tags may be split across chunks. Text is released as soon as it cannot be the start of a
 * tag; only a possible partial tag is held back.
 *
 * Gating decides where an opening tag counts:
 *   'start'    - only at the start of the output or right after a closed region (leading
 *                whitespace allowed): a reasoning block is emitted before the answer, so prose that
 *                merely mentions "<think>" later on is never swallowed;
 *   'anywhere' - wherever it appears (`<tool_call>` blocks the model was told to write).
 * Tag names are matched case-insensitively and may be any of the given variants.
 */
export type Piece =
  | { readonly type: 'outside'; readonly text: string }
  | { readonly type: 'inside'; readonly text: string }
  | { readonly type: 'close' };

export class TagSplitter {
  private buffer = '';
  private inside = false;
  /** Whether an opening tag would count here ('start' gating: nothing but whitespace so far). */
  private atBoundary = true;
  private readonly open: RegExp;
  private readonly close: RegExp;
  private readonly openTags: string[];
  private readonly closeTags: string[];

  constructor(
    names: readonly string[],
    private readonly gate: 'start' | 'anywhere',
  ) {
    const alt = names.map((n) => n.replace(/[^a-z0-9_]/gi, '')).join('|');
    this.open = new RegExp(`<(?:${alt})>`, 'i');
    this.close = new RegExp(`</(?:${alt})>`, 'i');
    this.openTags = names.map((n) => `<${n.toLowerCase()}>`);
    this.closeTags = names.map((n) => `</${n.toLowerCase()}>`);
  }

  push(chunk: string): Piece[] {
    this.buffer += chunk;
    return this.drain(false);
  }

  end(): Piece[] {
    return this.drain(true);
  }

  private drain(final: boolean): Piece[] {
    const out: Piece[] = [];
    for (;;) {
      if (this.inside) {
        const m = this.close.exec(this.buffer);
        if (m) {
          if (m.index > 0) out.push({ type: 'inside', text: this.buffer.slice(0, m.index) });
          out.push({ type: 'close' });
          this.buffer = this.buffer.slice(m.index + m[0].length);
          this.inside = false;
          this.atBoundary = true;
          continue;
        }
        const keep = final ? 0 : partialSuffix(this.buffer, this.closeTags);
        const text = this.buffer.slice(0, this.buffer.length - keep);
        if (text !== '') out.push({ type: 'inside', text });
        this.buffer = this.buffer.slice(this.buffer.length - keep);
        return out;
      }
      const at = this.findOpen();
      if (at.index >= 0) {
        if (at.index > 0) out.push({ type: 'outside', text: this.buffer.slice(0, at.index) });
        this.buffer = this.buffer.slice(at.index + at.length);
        this.inside = true;
        continue;
      }
      const keep = final ? 0 : at.hold;
      const text = this.buffer.slice(0, this.buffer.length - keep);
      if (text !== '') {
        out.push({ type: 'outside', text });
        if (/\S/.test(text)) this.atBoundary = false;
      }
      this.buffer = this.buffer.slice(this.buffer.length - keep);
      return out;
    }
  }

  /** Where a counting opening tag starts, or how many trailing characters might begin one. */
  private findOpen(): { index: number; length: number; hold: number } {
    if (this.gate === 'start') {
      if (!this.atBoundary) return { index: -1, length: 0, hold: 0 };
      const lead = /^\s*/.exec(this.buffer)![0].length;
      const rest = this.buffer.slice(lead);
      const m = this.open.exec(rest);
      if (m && m.index === 0) return { index: lead, length: m[0].length, hold: 0 };
      // Still undecided while the non-blank text could grow into an opening tag.
      if (rest === '' || this.openTags.some((t) => t.startsWith(rest.toLowerCase())))
        return { index: -1, length: 0, hold: this.buffer.length };
      return { index: -1, length: 0, hold: 0 };
    }
    const m = this.open.exec(this.buffer);
    if (m) return { index: m.index, length: m[0].length, hold: 0 };
    return { index: -1, length: 0, hold: partialSuffix(this.buffer, this.openTags) };
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of one of `tags`. */
function partialSuffix(text: string, tags: readonly string[]): number {
  const lower = text.toLowerCase();
  let best = 0;
  for (const tag of tags) {
    for (let n = Math.min(tag.length - 1, lower.length); n > best; n--) {
      if (tag.startsWith(lower.slice(lower.length - n))) {
        best = n;
        break;
      }
    }
  }
  return best;
}
