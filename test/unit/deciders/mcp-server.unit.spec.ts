import { event } from '../../../src/domain/deciders/decider';
import { mcpServerDecider, type McpServerCommand } from '../../../src/domain/deciders/mcp-server';
import { mcpServerProjection, mcpServerRowId } from '../../../src/domain/projections/mcp-server-projection';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { deciderSpec } from '../../support/decider-spec';
import { given } from './fixtures';

const admin = { actorType: 'admin' as const, actorId: 'ops' };
const ENTRY = { id: 'files', transport: { type: 'stdio', command: '${node}', args: ['s.js'] } };
const YAML_ENTRY = { id: 'docs', transport: { type: 'stdio', command: 'docs-server' } };
type WithoutActor<T> = T extends unknown ? Omit<T, 'actor'> : never;
const cmd = (c: WithoutActor<McpServerCommand>) => ({ actor: admin, ...c }) as McpServerCommand;

describe('mcp server decider (ADR 0052)', () => {
  const added = event('mcp.server.added', { serverId: 'files', entry: ENTRY, revision: 1 }, admin);

  it('adds a server once; a taken id (the log or config/mcp.yaml) is refused', () => {
    deciderSpec(mcpServerDecider)
      .given([])
      .when(cmd({ kind: 'AddMcpServer', serverId: 'files', seeded: null, entry: ENTRY }))
      .then([added]);
    deciderSpec(mcpServerDecider)
      .given(given([added]))
      .when(cmd({ kind: 'AddMcpServer', serverId: 'files', seeded: null, entry: ENTRY }))
      .thenRefuses('conflict');
    deciderSpec(mcpServerDecider)
      .given([])
      .when(cmd({ kind: 'AddMcpServer', serverId: 'docs', seeded: YAML_ENTRY, entry: YAML_ENTRY }))
      .thenRefuses('conflict');
  });

  it('updates with the changed fields; no change writes nothing; an unknown server is refused', () => {
    const entry = { ...ENTRY, health_interval_seconds: 5 };
    deciderSpec(mcpServerDecider)
      .given(given([added]))
      .when(cmd({ kind: 'UpdateMcpServer', serverId: 'files', seeded: null, entry }))
      .then([
        event(
          'mcp.server.updated',
          { serverId: 'files', entry, changed: ['health_interval_seconds'], origin: 'api', revision: 2 },
          admin,
        ),
      ]);
    deciderSpec(mcpServerDecider)
      .given(given([added]))
      .when(cmd({ kind: 'UpdateMcpServer', serverId: 'files', seeded: null, entry: ENTRY }))
      .then([]);
    deciderSpec(mcpServerDecider)
      .given([])
      .when(cmd({ kind: 'UpdateMcpServer', serverId: 'nope', seeded: null, entry: ENTRY }))
      .thenRefuses('not_found');
  });

  it('removes a YAML server (recorded with its origin), after which it may be added again', () => {
    const removed = event('mcp.server.removed', { serverId: 'docs', origin: 'yaml', revision: 1 }, admin);
    deciderSpec(mcpServerDecider)
      .given([])
      .when(cmd({ kind: 'RemoveMcpServer', serverId: 'docs', seeded: YAML_ENTRY }))
      .then([removed]);
    deciderSpec(mcpServerDecider)
      .given(given([removed]))
      .when(cmd({ kind: 'RemoveMcpServer', serverId: 'docs', seeded: YAML_ENTRY }))
      .thenRefuses('not_found');
    deciderSpec(mcpServerDecider)
      .given(given([removed]))
      .when(cmd({ kind: 'AddMcpServer', serverId: 'docs', seeded: YAML_ENTRY, entry: YAML_ENTRY }))
      .then([event('mcp.server.added', { serverId: 'docs', entry: YAML_ENTRY, revision: 2 }, admin)]);
  });

  it('the projection keeps one row per server, removed ones with status removed and no entry', () => {
    const stored = (type: string, data: Record<string, unknown>, n: number) =>
      ({
        type,
        data,
        sessionId: '11111111-1111-4111-8111-111111111111',
        tenantId: 't',
        actorId: 'ops',
        createdAt: `2026-12-03T00:00:0${n}.000Z`,
      }) as unknown as StoredEvent;
    const a = stored('mcp.server.added', { serverId: 'files', entry: ENTRY, revision: 1 }, 1);
    const r = stored('mcp.server.removed', { serverId: 'files', origin: 'api', revision: 2 }, 2);
    expect(mcpServerProjection.keyOf(a)).toBe(mcpServerRowId('files'));
    const row = mcpServerProjection.evolve(mcpServerProjection.evolve(undefined, a), r);
    expect(row).toMatchObject({
      server_id: 'files',
      status: 'removed',
      origin: 'api',
      entry: null,
      revision: 2,
      created_at: '2026-12-03T00:00:01.000Z',
      updated_at: '2026-12-03T00:00:02.000Z',
    });
  });
});
