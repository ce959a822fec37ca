import {
  loadSkillPackages as loadPackages,
  validateSkillPackage as validatePackage,
} from '../adapters/skills/skill-packages';
import type { LoadedSkill } from '../domain/skills/skill';

/** A package the validator refused, with every reason (docs/skills.md). */
export interface RefusedSkillPackage {
  readonly dir: string;
  readonly reasons: readonly string[];
}

/** Skill package validation for the CLI (`agent skills list|validate`); the adapter lives in adapters/skills. */
export function loadSkillPackages(skillsDir: string): { skills: LoadedSkill[]; refused: RefusedSkillPackage[] } {
  return loadPackages(skillsDir);
}

/** One package directory: the skill, or every reason it is refused. */
export function validateSkillPackage(dir: string): { skill: LoadedSkill | null; reasons: string[] } {
  return validatePackage(dir);
}
