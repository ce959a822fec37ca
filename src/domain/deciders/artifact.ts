import { ConflictError } from '../errors';
import type { EventPayloads } from '../events/payloads';
import { accept, event, refuse, type Actor, type Decider, type Decision, type DecidedEvent } from './decider';

export interface ArtifactState {
  readonly artifactId: string | null;
}

/** An artifact's content is stored; its metadata enters the session log once (plan §7). */
export interface CreateArtifact {
  readonly kind: 'CreateArtifact';
  readonly runId: string | null;
  readonly actor: Actor;
  readonly artifact: EventPayloads['artifact.created'];
}

export type ArtifactCommand = CreateArtifact;

function decide(cmd: ArtifactCommand, state: ArtifactState): Decision {
  if (state.artifactId !== null)
    return refuse(new ConflictError(`artifact ${state.artifactId} exists already`, { artifactId: state.artifactId }));
  const a = cmd.artifact;
  return accept(
    event(
      'artifact.created',
      {
        artifactId: a.artifactId,
        name: a.name,
        mediaType: a.mediaType,
        sha256: a.sha256,
        sizeBytes: a.sizeBytes,
        source: a.source,
        expiresAt: a.expiresAt,
      },
      { runId: cmd.runId, ...cmd.actor },
    ),
  );
}

function evolve(state: ArtifactState, e: DecidedEvent): ArtifactState {
  return e.type === 'artifact.created' ? { artifactId: e.data.artifactId } : state;
}

/** An artifact: created once, immutable after. */
export const artifactDecider: Decider<ArtifactCommand, ArtifactState> = {
  initialState: () => ({ artifactId: null }),
  evolve,
  decide,
};
