import { SECRET_PATTERNS } from './secret-scan';

/**
 * The credential scan of events (`secret-scan.ts`, ADR 0005) applied to a stream of text deltas
 * (issue 25 item 6, ADR 0042). An event carrying a credential is refused whole; a delta is live-only
 * preview text that cannot be refused after the fact, so a credential in it is replaced by
 * `[REDACTED:<pattern>]` (the trajectory export's spelling) before the frame is published, and the
 * raw text is never sent.
 *
 * A credential may arrive split over several deltas (`sk-` in one, the rest in the next), so the
 * redactor holds back the trailing text that could still become one, and releases it when a
 * character arrives that ends it (it is then redacted whole if it is a credential) or when the
 * stream ends. Only text that could start a credential is held (a word beginning `sk-`, `Bearer`,
 * `AKIA`, `eyJ`, … or a prefix of one, a private-key header being written): ordinary words go out
 * at once. A private key is held from its `-----BEGIN … PRIVATE KEY-----` header to its `-----END`
 * line and replaced as a whole block. A held run longer than MAX_HOLD_CHARS is released redacted as
 * far as it is recognisable (a key block that long is replaced from its header on, and the stream
 * swallowed until its end line).
 */

/** Held text beyond this is released: a preview must not stall forever on a long token. */
export const MAX_HOLD_CHARS = 8192;

const REDACTED = (name: string): string => `[REDACTED:${name}]`;

/** The store's patterns as global replacers, the more specific `sk-ant-` before `sk-`; private keys are replaced as blocks. */
const REPLACERS = [...SECRET_PATTERNS]
  .filter((p) => p.name !== 'private_key')
  .sort((x, y) => Number(y.name === 'anthropic_api_key') - Number(x.name === 'anthropic_api_key'))
  .map((p) => ({ name: p.name, pattern: new RegExp(p.pattern.source, `${p.pattern.flags}g`) }));

const PEM_HEADER = SECRET_PATTERNS.find((p) => p.name === 'private_key')!.pattern;
const PEM_BLOCK = /-----BEGIN ((?:[A-Z]+ )?PRIVATE KEY)-----[\s\S]*?-----END \1-----/g;
const PEM_FOOTER = /-----END (?:[A-Z]+ )?PRIVATE KEY-----/;
/** A private-key header still being written at the end of the text (up to its closing dashes). */
const PEM_FORMING = /-----BEGIN(?: [A-Z ]*-{0,4})?$/;
/** `Bearer` and what follows it so far, at the end of the text. */
const BEARER_FORMING = /\bBearer(?:\s+[A-Za-z0-9._~+/=-]*)?$/i;
/** A character a credential token is made of. */
const TOKEN_CHAR = /[A-Za-z0-9_.~+/=-]/;
/** How credentials of SECRET_PATTERNS begin (`bearer` compared case-insensitively). */
const STARTS = [
  'sk-',
  '-----BEGIN',
  'AKIA',
  'ASIA',
  ...['p', 'o', 'u', 's', 'r'].map((c) => `gh${c}_`),
  ...['a', 'b', 'p', 'o', 's', 'r'].map((c) => `xox${c}-`),
  'AIza',
  'eyJ',
];
const WORD = /\w/;

export interface Redaction {
  readonly text: string;
  /** Pattern names of the credentials replaced, once each. */
  readonly kinds: readonly string[];
}

/** Replaces every credential of the store's patterns in `text`; an unterminated key block is cut from its header. */
export function redactSecrets(text: string): Redaction & { readonly openKey: boolean } {
  const kinds = new Set<string>();
  let out = text.replace(PEM_BLOCK, () => {
    kinds.add('private_key');
    return REDACTED('private_key');
  });
  const open = PEM_HEADER.exec(out);
  if (open) {
    kinds.add('private_key');
    out = out.slice(0, open.index) + REDACTED('private_key');
  }
  for (const r of REPLACERS) {
    out = out.replace(r.pattern, () => {
      kinds.add(r.name);
      return REDACTED(r.name);
    });
  }
  return { text: out, kinds: [...kinds], openKey: open !== null };
}

/** The longest way a credential begins (STARTS, `bearer`): how far past `i` must be looked at. */
const LONGEST_START = Math.max(6, ...STARTS.map((x) => x.length));

/** Whether the text from `i` (a word boundary) on is, or may grow into, the start of a credential. */
function mayStartCredential(text: string, i: number): boolean {
  const rest = text.slice(i, i + LONGEST_START);
  // Only a piece that reaches the end of the text may still grow into a longer one.
  const atEnd = i + LONGEST_START >= text.length;
  if (atEnd && 'bearer'.startsWith(rest.toLowerCase())) return true;
  return STARTS.some((s) => rest.startsWith(s) || (atEnd && s.startsWith(rest)));
}

/** Where the text that must be held back starts (`text.length` when nothing must be). */
export function holdFrom(text: string): number {
  let cut = text.length;
  let header: RegExpExecArray | null = null;
  for (const m of text.matchAll(new RegExp(PEM_HEADER.source, 'g'))) header = m;
  if (header && !PEM_FOOTER.test(text.slice(header.index + header[0].length))) cut = header.index;
  for (const forming of [PEM_FORMING, BEARER_FORMING]) {
    const m = forming.exec(text);
    if (m) cut = Math.min(cut, m.index);
  }
  // Where the trailing run of token characters starts (a backward scan: `[…]*$` would be quadratic).
  let token = text.length;
  while (token > 0 && TOKEN_CHAR.test(text[token - 1])) token--;
  for (let i = token; i < cut; i++) {
    // A credential starting with a word character needs a word boundary before it (`\b` in the patterns).
    if (i > 0 && WORD.test(text[i]) && WORD.test(text[i - 1])) continue;
    if (mayStartCredential(text, i)) {
      cut = i;
      break;
    }
  }
  return outsideMatches(text, cut);
}

/** `cut`, moved back to the start of any complete credential it would split (it is then held whole). */
function outsideMatches(text: string, cut: number): number {
  if (cut === text.length) return cut;
  for (const re of [PEM_BLOCK, ...REPLACERS.map((r) => r.pattern)]) {
    for (const m of text.matchAll(re)) {
      if (m.index >= cut) break;
      if (m.index + m[0].length > cut) return outsideMatches(text, m.index);
    }
  }
  return cut;
}

/** One stream of deltas (a run's text, or its reasoning): what may be published of each. */
export class StreamRedactor {
  private held = '';
  /** Inside a private key whose header was released redacted: dropped until its end line. */
  private swallowing = false;
  private readonly found = new Set<string>();

  /** Credential kinds redacted so far in this stream. */
  get kinds(): readonly string[] {
    return [...this.found];
  }

  /** The part of `held + delta` that may be published now, redacted; the rest stays held. */
  push(delta: string): string {
    let text = this.held + delta;
    this.held = '';
    if (this.swallowing) {
      const end = PEM_FOOTER.exec(text);
      if (!end) {
        // Keep enough to recognise an end line split over deltas.
        this.held = text.slice(-64);
        return '';
      }
      text = text.slice(end.index + end[0].length);
      this.swallowing = false;
    }
    const cut = holdFrom(text);
    if (text.length - cut > MAX_HOLD_CHARS) return this.release(text, true);
    this.held = text.slice(cut);
    return this.release(text.slice(0, cut), false);
  }

  /** The stream ended: everything held, redacted (nothing of a key being swallowed). */
  end(): string {
    const rest = this.swallowing ? '' : this.held;
    this.held = '';
    this.swallowing = false;
    return this.release(rest, false);
  }

  private release(text: string, forced: boolean): string {
    if (text.length === 0) return '';
    const r = redactSecrets(text);
    for (const k of r.kinds) this.found.add(k);
    if (forced && r.openKey) this.swallowing = true;
    return r.text;
  }
}
