/**
 * Recognises the demo model's action requests (all anchored at the start of the message, so the
 * time and arithmetic phrasings are never taken):
 *   "ask me <question>"          -> conversation.ask_user {question}
 *   "send <text> to <target>"    -> demo.external_write {target, text}
 *   "publish <text>"             -> demo.external_write {target: "public", text}
 *   "write <text> to <path>"     -> workspace.write_text {path, content}
 *   "read <path>"                -> workspace.read_text {path}
 *   "list files"                 -> workspace.list_files {}
 */
export type ActionRequest =
  | { readonly kind: 'ask'; readonly question: string }
  | { readonly kind: 'send'; readonly target: string; readonly text: string }
  | { readonly kind: 'write'; readonly path: string; readonly content: string }
  | { readonly kind: 'read'; readonly path: string }
  | { readonly kind: 'list' };

const unquote = (s: string) => s.trim().replace(/^["'\u201c](.*)["'\u201d]$/s, '$1');

export function parseActionRequest(message: string): ActionRequest | null {
  const m = message.trim();
  let r: RegExpExecArray | null;
  if ((r = /^ask me\s+(.+)$/is.exec(m))) return { kind: 'ask', question: r[1].trim() };
  if ((r = /^send\s+(.+)\s+to\s+(.+?)[.!]*$/is.exec(m)))
    return { kind: 'send', target: unquote(r[2]), text: unquote(r[1]) };
  if ((r = /^publish\s+(.+?)[.!]*$/is.exec(m))) return { kind: 'send', target: 'public', text: unquote(r[1]) };
  if ((r = /^write\s+(.+)\s+to\s+(\S+?)[.!]*$/is.exec(m)))
    return { kind: 'write', path: unquote(r[2]), content: unquote(r[1]) };
  if ((r = /^read\s+(\S+?)[.!?]*$/i.exec(m))) return { kind: 'read', path: unquote(r[1]) };
  if (/^(?:list|show)(?: the| my)? files[.!?]*$/i.test(m)) return { kind: 'list' };
  return null;
}
