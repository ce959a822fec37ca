/**
 * Who exists now and what they may do (ADR 0034): a schedule stores a principal id and requested
 * scopes, never a credential, and the scheduler asks this at every firing. In token mode it is the
 * tokens file (a principal exists while one of its tokens does; its scopes are the union of its
 * tokens'); in dev mode, the one local principal.
 */
export interface PrincipalDirectory {
  /** The principal's current scopes, or null when it no longer exists in the tenant. */
  scopesOf(tenantId: string, principalId: string): ReadonlySet<string> | null;
}
