/** Skill package validation for the CLI (`agent skills list|validate`); the adapter lives in adapters/skills. */
export { loadSkillPackages, validateSkillPackage } from '../adapters/skills/skill-packages';
