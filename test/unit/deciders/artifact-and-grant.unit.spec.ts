import { agentGrantDecider } from '../../../src/domain/deciders/agent-grant';
import { artifactDecider, type ArtifactCommand } from '../../../src/domain/deciders/artifact';
import { event } from '../../../src/domain/deciders/decider';
import { deciderSpec } from '../../support/decider-spec';
import { given, RUN } from './fixtures';

const artifact = {
  artifactId: '88888888-8888-4888-8888-888888888888',
  name: 'out.txt',
  mediaType: 'text/plain',
  sha256: 'b'.repeat(64),
  sizeBytes: 3,
  source: 'tool_result',
  expiresAt: null,
};
const create: ArtifactCommand = { kind: 'CreateArtifact', runId: RUN, actor: { actorType: 'system' }, artifact };

describe('artifact decider', () => {
  it('creates an artifact once', () => {
    const created = event('artifact.created', artifact, { runId: RUN, actorType: 'system' });
    deciderSpec(artifactDecider).given([]).when(create).then([created]);
    deciderSpec(artifactDecider)
      .given(given([created]))
      .when(create)
      .thenRefuses('conflict');
  });
});

describe('agent grant audit decider', () => {
  const admin = { actorType: 'admin' as const, actorId: 'ops' };
  // The grant carries its argument rules (event v2): copied into the event as given.
  const RULES = { read: { path: { type: 'string', pattern: '^docs/' } } };
  const replace = (
    serverId: string,
    previous: {
      default: 'allow' | 'deny';
      tools: Record<string, 'allow' | 'deny'>;
      rules: Record<string, Record<string, Record<string, unknown>>>;
    } | null,
  ) => ({
    kind: 'ReplaceMcpGrant' as const,
    actor: admin,
    agentId: 'demo',
    serverId,
    grant: { default: 'deny' as const, tools: { read: 'allow' as const }, rules: RULES },
    previous,
  });
  it('numbers each server grant replacement, with what it replaced', () => {
    const first = event(
      'agent.mcp_grant.replaced',
      {
        agentId: 'demo',
        serverId: 'fs',
        grant: { default: 'deny', tools: { read: 'allow' }, rules: RULES },
        previous: null,
        revision: 1,
      },
      admin,
    );
    const spec = deciderSpec(agentGrantDecider);
    spec.given([]).when(replace('fs', null)).then([first]);
    const prev = { default: 'deny' as const, tools: { read: 'allow' as const }, rules: {} };
    spec
      .given(given([first]))
      .when(replace('fs', prev))
      .then([
        event(
          'agent.mcp_grant.replaced',
          {
            agentId: 'demo',
            serverId: 'fs',
            grant: { default: 'deny', tools: { read: 'allow' }, rules: RULES },
            previous: prev,
            revision: 2,
          },
          admin,
        ),
      ]);
    // Another server of the same agent counts on its own.
    const d = spec.given(given([first])).when(replace('web', null)).decision;
    expect(d.kind === 'events' && d.events[0].data).toMatchObject({ serverId: 'web', revision: 1 });
  });
});
