import type { LoadedSkill, SkillSummary } from '../domain/skills/skill';

/** The skills a process can offer: fixed for its life (read at startup), so a session's catalog is stable. */
export interface SkillSource {
  /** Metadata only, sorted by name. */
  list(): readonly SkillSummary[];
  /** One skill with its instructions, or null when there is no such skill. */
  load(name: string, signal: AbortSignal): Promise<LoadedSkill | null>;
}
