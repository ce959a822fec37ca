import type { Database } from '../adapters/postgres/database';
import { TrajectoryExporter } from '../adapters/trajectory/exporter';
import { PgConsentRegistry } from '../adapters/trajectory/pg-consent-registry';
import { PgExportJobs } from '../adapters/trajectory/pg-export-jobs';
import { PLATFORM_POLICY } from '../context/context-builder';
import type { AgentCatalog } from '../ports/agent-catalog';
import type { ArtifactStore } from '../ports/artifact-store';
import type { Clock, IdFactory } from '../ports/clock';
import type { Logger } from '../ports/logger';
import type { Trajectories } from './trajectory';

/** Binds the trajectory adapters (exporter, consent registry, export jobs) for the platform. */
export function createTrajectories(deps: {
  db: Database;
  agents: AgentCatalog;
  artifacts: ArtifactStore;
  clock: Clock;
  ids: IdFactory;
  log: Logger;
}): Trajectories {
  const exporter = new TrajectoryExporter({
    db: deps.db,
    // The same system prompt the context builder sends (its Region A text, without the tool list).
    systemPrompt: async (agentId, version) => {
      const agent = await deps.agents.get(agentId, version);
      return agent ? `${PLATFORM_POLICY}\n\n# Agent instructions\n${agent.instructions.trim()}` : null;
    },
  });
  return {
    exporter,
    consent: new PgConsentRegistry(deps.db, deps.artifacts, deps.clock),
    jobs: new PgExportJobs(deps.db, exporter, deps.artifacts, deps.clock, deps.ids, deps.log),
  };
}
