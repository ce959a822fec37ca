/**
 * Recognises the demo model's action requests (all anchored at the start of the message, so the
 * time and arithmetic phrasings are never taken):
 *   "ask me <question>"          -> conversation.ask_user {question}
 *   "send <text> to <target>"    -> demo.external_write {target, text}
 *   "publish <text>"             -> demo.external_write {target: "public", text}
 *   "write <text> to <path>"     -> workspace.write_text {path, content}
 *   "read <path>"                -> workspace.read_text {path}
 *   "list files"                 -> workspace.list_files {}
 *   "export <path>"              -> artifact.export {path}
 *   "run <command and args>"     -> sandbox.run_command {command: argv split on whitespace, '…'/"…" kept whole}
 *   "call <tool> with <JSON object>" -> exactly that tool with exactly those arguments
 *                                   (builtin or MCP; anything but a JSON object falls through)
 *   "use skill <name>"           -> skill.load {name}
 *   "delegate: <task>; <task>"   -> delegate.run, one brief per task (ADR 0037)
 */
export type ActionRequest =
  | { readonly kind: 'ask'; readonly question: string }
  | { readonly kind: 'send'; readonly target: string; readonly text: string }
  | { readonly kind: 'write'; readonly path: string; readonly content: string }
  | { readonly kind: 'read'; readonly path: string }
  | { readonly kind: 'list' }
  | { readonly kind: 'export'; readonly path: string }
  | { readonly kind: 'run'; readonly argv: readonly string[] }
  | { readonly kind: 'call'; readonly name: string; readonly arguments: Record<string, unknown> }
  | { readonly kind: 'skill'; readonly name: string }
  | { readonly kind: 'delegate'; readonly tasks: readonly string[] };

const unquote = (s: string) => s.trim().replace(/^["'\u201c](.*)["'\u201d]$/s, '$1');

export function parseActionRequest(message: string): ActionRequest | null {
  const m = message.trim();
  let r: RegExpExecArray | null;
  if ((r = /^call\s+([A-Za-z][A-Za-z0-9_.-]*)\s+with\s+(\{.*\})\s*$/is.exec(m))) {
    const args = parseObject(r[2]);
    if (args !== null) return { kind: 'call', name: r[1], arguments: args };
  }
  if ((r = /^delegate:\s*(.+)$/is.exec(m))) {
    const tasks = r[1]
      .split(';')
      .map((t) => t.trim())
      .filter((t) => t !== '');
    if (tasks.length > 0) return { kind: 'delegate', tasks };
  }
  if ((r = /^use skill\s+([A-Za-z0-9][A-Za-z0-9_.-]*)[.!]*$/i.exec(m))) return { kind: 'skill', name: r[1] };
  if ((r = /^ask me\s+(.+)$/is.exec(m))) return { kind: 'ask', question: r[1].trim() };
  if ((r = /^send\s+(.+)\s+to\s+(.+?)[.!]*$/is.exec(m)))
    return { kind: 'send', target: unquote(r[2]), text: unquote(r[1]) };
  if ((r = /^publish\s+(.+?)[.!]*$/is.exec(m))) return { kind: 'send', target: 'public', text: unquote(r[1]) };
  if ((r = /^write\s+(.+)\s+to\s+(\S+?)[.!]*$/is.exec(m)))
    return { kind: 'write', path: unquote(r[2]), content: unquote(r[1]) };
  if ((r = /^read\s+(\S+?)[.!?]*$/i.exec(m))) return { kind: 'read', path: unquote(r[1]) };
  if (/^(?:list|show)(?: the| my)? files[.!?]*$/i.test(m)) return { kind: 'list' };
  if ((r = /^export\s+(\S+?)[.!?]*$/i.exec(m))) return { kind: 'export', path: unquote(r[1]) };
  if ((r = /^run\s+(.+)$/is.exec(m))) {
    const argv = splitArgv(r[1]);
    if (argv.length > 0) return { kind: 'run', argv };
  }
  return null;
}

/** Splits on whitespace; a '…' or "…" span is one argument (no escapes, no expansion: not a shell). */
export function splitArgv(text: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text.trim())) !== null) out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
