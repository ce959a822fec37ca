import type { Principal } from './principal';

/**
 * The exact set of scopes a run may use (ADR 0032). Recorded once, at submit, on the run's
 * `run.queued` (v2 `scopes`) and in `runs.scopes`; every tool call of the run — by any worker, after
 * any approval or crash — is authorized against this record and nothing else, so revoking or
 * narrowing the submitter's token later never widens what the run may do (it does not narrow it
 * either: a run keeps the set it started with).
 *
 * Scope names are matched exactly (no hierarchy, no wildcard). The set is immutable and its
 * `names` are sorted and unique, so the same set always serialises the same way.
 */
export class ScopeSet {
  /** Sorted, unique scope names. */
  readonly names: readonly string[];
  private readonly lookup: ReadonlySet<string>;

  private constructor(names: readonly string[]) {
    this.names = Object.freeze([...new Set(names)].sort());
    this.lookup = new Set(this.names);
  }

  static of(names: Iterable<string>): ScopeSet {
    return new ScopeSet([...names]);
  }

  static readonly EMPTY = new ScopeSet([]);

  /**
   * The scope set of a new run: what the submitter holds, narrowed to what the agent allows
   * (`allowed_scopes` in the agent's YAML; absent means the agent narrows nothing). Delegating
   * callers (schedules, subagents) pass the recorded set of the run or schedule they act for as
   * `submitter`, so a derived run can never hold more than its origin.
   */
  static forRun(submitter: Iterable<string>, agentAllowed?: readonly string[] | null): ScopeSet {
    const own = ScopeSet.of(submitter);
    return agentAllowed === undefined || agentAllowed === null ? own : own.intersect(agentAllowed);
  }

  has(scope: string): boolean {
    return this.lookup.has(scope);
  }

  /** The scopes of both sets. */
  intersect(other: Iterable<string>): ScopeSet {
    const keep = new Set(other);
    return new ScopeSet(this.names.filter((s) => keep.has(s)));
  }

  /** The scopes of `required` this set lacks, in the order given (empty when it holds them all). */
  missing(required: readonly string[]): string[] {
    return required.filter((s) => !this.lookup.has(s));
  }

  /** Whether every scope of this set is also in `other`. */
  isWithin(other: ScopeSet | ReadonlySet<string>): boolean {
    return this.names.every((s) => other.has(s));
  }

  /** A read-only Set view (what `Principal.scopes` holds). */
  toSet(): ReadonlySet<string> {
    return this.lookup;
  }

  toJSON(): string[] {
    return [...this.names];
  }
}

/**
 * The approver role (ADR 0032): a principal holding it reads and resolves every approval of its
 * tenant, not only those of its own runs. It widens `approvals.read` and `approvals.resolve` (which
 * the routes still require) and is never part of the `user` token preset.
 */
export const APPROVALS_REVIEW_SCOPE = 'approvals.review';

/** Whose approvals `principal` may see and resolve: its own, or, as an approver, its whole tenant's. */
export function approvalReach(principal: Pick<Principal, 'tenantId' | 'principalId' | 'scopes'>): {
  readonly tenantId: string;
  readonly principalId: string | null;
} {
  return {
    tenantId: principal.tenantId,
    principalId: principal.scopes.has(APPROVALS_REVIEW_SCOPE) ? null : principal.principalId,
  };
}

/**
 * The principal a run executes as: the run's tenant and principal, with exactly its recorded scope
 * set and no roles. The worker builds it from the run row; a run recorded before scope sets existed
 * reads the local principal's set (the `run.queued` v1 upcaster), which is what such runs ran with.
 */
export function runPrincipal(run: {
  readonly tenantId: string;
  readonly principalId: string;
  readonly scopes: readonly string[];
}): Principal {
  return {
    tenantId: run.tenantId,
    principalId: run.principalId,
    roles: new Set(),
    scopes: ScopeSet.of(run.scopes).toSet(),
  };
}
