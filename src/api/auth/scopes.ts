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
] as const;
export type ApiScope = (typeof API_SCOPES)[number];

/**
 * Operator routes (MCP server control, agent grants). Not part of the `user` preset: a token gets
 * it only by naming it (`agent auth token create --scopes admin`); AUTH_MODE=dev's local principal has it.
 */
export const ADMIN_SCOPE = 'admin';
export type RouteScope = ApiScope | typeof ADMIN_SCOPE;

/** The scope that lets a principal's runs use tools at all (see LOCAL_PRINCIPAL). */
export const TOOL_USE_SCOPE = 'tools.use';

/** The preset a token file may name instead of a list: every API scope plus the builtin tools' scopes. */
export const USER_PRESET = 'user';

/** Every scope a token may hold: the API scopes and the scopes the builtin tools require. */
export function scopeVocabulary(toolScopes: readonly string[]): ReadonlySet<string> {
  return new Set<string>([...API_SCOPES, ADMIN_SCOPE, TOOL_USE_SCOPE, ...toolScopes]);
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
      for (const s of vocabulary) if (s !== ADMIN_SCOPE) scopes.add(s);
    } else if (vocabulary.has(name)) scopes.add(name);
    else unknown.push(name);
  }
  return { scopes, unknown };
}
