/** Every run has an authenticated principal, even in a single-user deployment (plan §6.2). */
export interface Principal {
  readonly tenantId: string;
  readonly principalId: string;
  readonly roles: ReadonlySet<string>;
  readonly scopes: ReadonlySet<string>;
}

/** The principal of the local single-user deployment (AUTH_MODE=dev, the CLI on this machine). */
export const LOCAL_PRINCIPAL: Principal = {
  tenantId: 'local',
  principalId: 'local-user',
  roles: new Set(['owner', 'admin']),
  scopes: new Set([
    'sessions.read',
    'sessions.write',
    'runs.read',
    'runs.write',
    'approvals.read',
    'approvals.resolve',
    'tools.use',
    'trajectories.export',
    'consent.manage',
    'consent.admin',
    'memory.read',
    'memory.write',
    'schedules.read',
    'schedules.write',
  ]),
};
