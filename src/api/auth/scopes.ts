import { APPROVALS_REVIEW_SCOPE } from '../../domain/scopes';

/**
 * The closed scope vocabulary of the HTTP API (plan §16, §22). Scopes are matched exactly: there is
 * no hierarchy and no wildcard, and every route requires exactly one of them.
 */
export const API_SCOPES = [
  'sessions.read',
  'sessions.write',
  'runs.read',
  'runs.write',
  'approvals.read',
  'approvals.resolve',
  // Trajectory export (docs/trajectories.md): start and read exports; one's own consent; others' consent.
  'trajectories.export',
  'consent.manage',
  'consent.admin',
  // Long-term memory (issue 30): read one's memories; edit and delete them.
  'memory.read',
  'memory.write',
  // Schedules (docs/schedules.md): list and read one's own; create, change, pause, resume, cancel.
  'schedules.read',
  'schedules.write',
] as const;
export type ApiScope = (typeof API_SCOPES)[number];

/**
 * Operator routes (MCP server control, agent grants). Not part of the `user` preset: a token gets
 * it only by naming it (`agent auth token create --scopes admin`); AUTH_MODE=dev's local principal has it.
 */
export const ADMIN_SCOPE = 'admin';
export type RouteScope = ApiScope | typeof ADMIN_SCOPE;

/**
 * The approver role (ADR 0032): with it, `approvals.read` and `approvals.resolve` reach every
 * principal's approvals of the tenant. Like `admin`, never in the `user` preset: named explicitly.
 */
export const REVIEW_SCOPE = APPROVALS_REVIEW_SCOPE;

/** The scope that lets a principal's runs use tools at all (see LOCAL_PRINCIPAL). */
export const TOOL_USE_SCOPE = 'tools.use';

/** The preset a token file may name instead of a list: every API scope plus the builtin tools' scopes. */
export const USER_PRESET = 'user';

/** Every scope a token may hold: the API scopes and the scopes the builtin tools require. */
export function scopeVocabulary(toolScopes: readonly string[]): ReadonlySet<string> {
  return new Set<string>([...API_SCOPES, ADMIN_SCOPE, REVIEW_SCOPE, TOOL_USE_SCOPE, ...toolScopes]);
}

/** Expands the `user` preset; refuses a name outside the vocabulary. */
export function expandScopes(
  raw: readonly string[] | string,
  toolScopes: readonly string[],
): { scopes: Set<string>; unknown: string[] } {
  const names = typeof raw === 'string' ? [raw] : raw;
  const vocabulary = scopeVocabulary(toolScopes);
  const scopes = new Set<string>();
  const unknown: string[] = [];
  for (const name of names) {
    if (name === USER_PRESET) {
      for (const s of vocabulary) if (s !== ADMIN_SCOPE && s !== REVIEW_SCOPE) scopes.add(s);
    } else if (vocabulary.has(name)) scopes.add(name);
    else unknown.push(name);
  }
  return { scopes, unknown };
}
