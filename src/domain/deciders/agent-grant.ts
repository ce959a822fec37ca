import type { EventPayloads } from '../events/payloads';
import { accept, event, type Actor, type Decider, type Decision, type DecidedEvent } from './decider';

type Grant = EventPayloads['agent.mcp_grant.replaced']['grant'];

/** One agent's operator grants, as its audit session has them (docs/mcp.md, "Per-agent grants"). */
export interface AgentGrantState {
  /** Per MCP server, how many times its grant was replaced (absent: never; the agent file's grant applies). */
  readonly revisions: Readonly<Record<string, number>>;
}

/** An operator replaces the grant; `previous` is the grant that applied until now (null: none). */
export interface ReplaceMcpGrant {
  readonly kind: 'ReplaceMcpGrant';
  readonly actor: Actor;
  readonly agentId: string;
  readonly serverId: string;
  readonly grant: Grant;
  readonly previous: Grant | null;
}

export type AgentGrantCommand = ReplaceMcpGrant;

function copy(g: Grant): Grant {
  return { default: g.default, tools: { ...g.tools }, rules: JSON.parse(JSON.stringify(g.rules)) as Grant['rules'] };
}

function decide(cmd: AgentGrantCommand, state: AgentGrantState): Decision {
  const { agentId, serverId } = cmd;
  return accept(
    event(
      'agent.mcp_grant.replaced',
      {
        agentId,
        serverId,
        grant: copy(cmd.grant),
        previous: cmd.previous ? copy(cmd.previous) : null,
        revision: (state.revisions[serverId] ?? 0) + 1,
      },
      cmd.actor,
    ),
  );
}

function evolve(state: AgentGrantState, e: DecidedEvent): AgentGrantState {
  if (e.type !== 'agent.mcp_grant.replaced') return state;
  return { revisions: { ...state.revisions, [e.data.serverId]: e.data.revision } };
}

/** The grant audit of one agent: each replacement of a server's grant numbered, with what it replaced. */
export const agentGrantDecider: Decider<AgentGrantCommand, AgentGrantState> = {
  initialState: () => ({ revisions: {} }),
  evolve,
  decide,
};
