/** The /v1 API from the browser: bearer token (token mode), error envelope in words, idempotent retries. */

const TOKEN_KEY = 'agent-core.token';

export function getToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function setToken(token: string | null): void {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage unavailable: the token lives only in memory for this page */
  }
  authListeners.forEach((l) => l());
}

const authListeners = new Set<() => void>();
export function onAuthChange(l: () => void): () => void {
  authListeners.add(l);
  return () => authListeners.delete(l);
}

export function authHeaders(): Record<string, string> {
  const t = getToken();
  return t ? { authorization: `Bearer ${t}` } : {};
}

/** An API error, in words. `status` 0 means the network failed (no answer). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
  get needsSignIn(): boolean {
    return this.status === 401;
  }
}

interface Envelope {
  error?: { code?: string; message?: string; details?: Record<string, unknown>; request_id?: string };
}

/** "validation_error: content must hold at least one text part (field content)" and the like. */
export function describeError(body: Envelope | null, status: number): ApiError {
  const e = body?.error;
  if (!e) return new ApiError(status, 'http_error', `The server answered ${status}.`);
  const fields = Array.isArray(e.details?.fields)
    ? (e.details.fields as { field?: string; message?: string; messages?: string[] }[])
        .map((f) => [f.field, f.message ?? f.messages?.join(', ')].filter(Boolean).join(': '))
        .filter(Boolean)
    : [];
  let msg = e.message ?? `The server answered ${status}.`;
  if (fields.length && !fields.every((f) => msg.includes(f))) msg += ` (${fields.join('; ')})`;
  return new ApiError(status, e.code ?? 'error', msg, e.details ?? {});
}

export async function api<T>(
  method: string,
  path: string,
  body?: unknown,
  extraHeaders: Record<string, string> = {},
): Promise<T> {
  let r: Response;
  try {
    r = await fetch(path, {
      method,
      headers: {
        accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...authHeaders(),
        ...extraHeaders,
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The API could not be reached (network error).');
  }
  const text = await r.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!r.ok) throw describeError(parsed as Envelope, r.status);
  return parsed as T;
}

/** A UUID without needing a secure context (crypto.randomUUID is missing on plain-http LAN hosts). */
export function newKey(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * POST with an Idempotency-Key that is reused on every retry: a request the network lost (no answer)
 * is sent again up to `attempts` times, so the server records one run at most.
 */
export async function postIdempotent<T>(path: string, body: unknown, key: string, attempts = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await api<T>('POST', path, body, { 'idempotency-key': key });
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 0 || i >= attempts) throw e;
      await sleep(300 * i);
    }
  }
}

// ---- wire shapes (snake_case, as docs/api.md) ----

export interface Session {
  id: string;
  status: string;
  agent_id: string;
  agent_version: number;
  title: string | null;
  active_run_id: string | null;
  last_run_id: string | null;
  last_sequence: number;
  created_at: string;
  updated_at: string;
  /** A fork (issue 33): the session it was forked from and the parent sequence its history ends at. */
  parent_session_id?: string | null;
  forked_at_sequence?: number | null;
}

/** A durable transcript message (`GET /v1/sessions/{id}/messages`). */
export interface Message {
  sequence: number;
  role: 'user' | 'assistant';
  run_id: string | null;
  content: { type: string; text?: string }[];
}

/** One session of a fork tree (`GET /v1/sessions/{id}/tree`). */
export interface ForkNode {
  id: string;
  title: string | null;
  status: string;
  parent_session_id: string | null;
  forked_at_sequence: number | null;
  created_at: string;
  children: ForkNode[];
}

export interface Run {
  id: string;
  session_id: string;
  status: string;
  agent_id: string;
  model_policy: string;
  step_count: number;
  model_call_count: number;
  tool_call_count: number;
  usage: Record<string, number>;
  cost: string;
  failure: { reason: string; message: string; error_code: string | null } | null;
  final_text: string | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  /** A consensus run's rounds, proposals, failures and synthesis (ADR 0047); null for any other run. */
  consensus?: Consensus | null;
}

export interface Consensus {
  question: string;
  rounds: {
    round: number;
    role: string;
    samples: { slot: number; engine: string; attempt: number; run_id: string }[];
  }[];
  proposals: { slot: number; engine: string; attempt: number; run_id: string; text: string }[];
  failures: {
    role: string;
    slot: number;
    engine: string;
    attempt: number;
    run_id: string;
    status: string;
    error: string;
  }[];
  synthesis: { run_id: string; synthesizer: string; text: string; proposals: string[] } | null;
}

export interface Approval {
  id: string;
  run_id: string;
  session_id: string;
  /** Whose run it is (an approver sees every principal's approvals of its tenant). */
  principal_id: string;
  status: string;
  action_kind: string;
  risk: string;
  tool_name: string | null;
  arguments: unknown;
  action_summary: string | null;
  policy_reason: string | null;
  decision: string | null;
  reason: string | null;
  /** Approve with edits (ADR 0044): the arguments that ran instead, both hashes and the editor. */
  edit?: {
    arguments: Record<string, unknown>;
    original_arguments_hash: string;
    edited_arguments_hash: string;
    edited_by: string;
  } | null;
  /** The tool's arguments schema, for the "Edit arguments" form; null when the call cannot be edited. */
  arguments_schema?: Record<string, unknown> | null;
  expires_at: string | null;
  created_at: string;
  resolved_at: string | null;
  resolved_by: string | null;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** A persisted event as an SSE frame carries it. */
export interface WireEvent {
  type: string;
  sequence: number;
  run_id: string | null;
  created_at: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- payloads are per event type
  payload: Record<string, any>;
}

export const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);
export const TERMINAL_STATUS = new Set(['completed', 'failed', 'cancelled', 'interrupted']);
