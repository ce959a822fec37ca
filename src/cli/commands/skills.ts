import * as path from 'node:path';
import type { Command } from 'commander';
import { loadSkillPackages, validateSkillPackage } from '../../composition/skills';
import { loadDotEnv, loadSettings } from '../../config/settings';
import { EXIT } from '../exit-codes';

function skillsDir(): string {
  loadDotEnv();
  return process.env.SKILLS_DIR || path.join(loadSettings().configDir, 'skills');
}

/** `agent skills list|validate`: the SKILL.md packages of SKILLS_DIR (docs/skills.md); no database needed. */
export function registerSkillCommands(program: Command): void {
  const skills = program
    .command('skills')
    .description('skill packages (SKILL.md) in SKILLS_DIR (default config/skills)');
  skills
    .command('list')
    .description('valid skills, metadata only (name, version, description, required tools)')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      const { skills: valid, refused } = loadSkillPackages(skillsDir());
      const meta = valid.map((s) => ({
        name: s.name,
        version: s.version,
        description: s.description,
        required_tools: s.requiredTools,
      }));
      if (opts.json) process.stdout.write(`${JSON.stringify(meta)}\n`);
      else if (meta.length === 0) process.stdout.write(`no skills in ${skillsDir()}\n`);
      else
        for (const s of meta)
          process.stdout.write(
            `${s.name} ${s.version}  ${s.description}${s.required_tools.length ? `  [needs ${s.required_tools.join(', ')}]` : ''}\n`,
          );
      if (refused.length) process.stderr.write(`${refused.length} package(s) refused; run \`agent skills validate\`\n`);
      process.exit(EXIT.ok);
    });
  skills
    .command('validate [dir]')
    .description('validate one package directory, or every package in SKILLS_DIR; exit 2 when any is refused')
    .action((dir?: string) => {
      const results = dir
        ? [{ dir, ...validateSkillPackage(path.resolve(dir)) }]
        : (() => {
            const all = loadSkillPackages(skillsDir());
            return [
              ...all.skills.map((s) => ({ dir: s.name, skill: s, reasons: [] as string[] })),
              ...all.refused.map((r) => ({ dir: r.dir, skill: null, reasons: [...r.reasons] })),
            ];
          })();
      let bad = 0;
      for (const r of results) {
        if (r.skill) process.stdout.write(`ok       ${r.skill.name} ${r.skill.version}\n`);
        else {
          bad++;
          process.stdout.write(`refused  ${r.dir}\n${r.reasons.map((x) => `  - ${x}\n`).join('')}`);
        }
      }
      process.exit(bad ? EXIT.usage : EXIT.ok);
    });
}
