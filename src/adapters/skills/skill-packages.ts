import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { scanForInjection, type LoadedSkill, type SkillSummary } from '../../domain/skills/skill';
import type { SkillSource } from '../../ports/skills';

/** One package the validator refused, with every reason (docs/skills.md). */
export interface RefusedSkill {
  readonly dir: string;
  readonly reasons: readonly string[];
}

const NAME = /^[a-z][a-z0-9-]{0,63}$/;
const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
const TOOL = /^[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+$/;
const KNOWN_FIELDS = new Set(['name', 'version', 'description', 'required_tools', 'license', 'metadata']);
const MAX_SKILL_BYTES = 64 * 1024;

/** Files directly under `<dir>/<sub>/` (regular files only; a symlink is refused). */
function filesOf(dir: string, sub: string, reasons: string[]): string[] {
  const p = path.join(dir, sub);
  if (!fs.existsSync(p)) return [];
  if (!fs.lstatSync(p).isDirectory()) {
    reasons.push(`${sub} must be a directory`);
    return [];
  }
  const out: string[] = [];
  for (const e of fs.readdirSync(p, { withFileTypes: true })) {
    if (e.isSymbolicLink()) reasons.push(`${sub}/${e.name} is a symbolic link`);
    else if (e.isFile()) out.push(`${sub}/${e.name}`);
  }
  return out.sort();
}

/** Every reason the front matter's fields are refused (unknown fields, name, version, ...). */
function frontMatterProblems(f: Record<string, unknown>): string[] {
  const reasons: string[] = [];
  for (const k of Object.keys(f)) if (!KNOWN_FIELDS.has(k)) reasons.push(`unknown front matter field '${k}'`);
  if (typeof f.name !== 'string' || !NAME.test(f.name))
    reasons.push(
      `name: required, lower-case letters, digits and '-', starting with a letter (got ${JSON.stringify(f.name)})`,
    );
  const version = typeof f.version === 'number' ? String(f.version) : f.version;
  if (typeof version !== 'string' || !SEMVER.test(version))
    reasons.push(`version: required, a semantic version like 1.0.0 (got ${JSON.stringify(f.version)})`);
  if (typeof f.description !== 'string' || f.description.trim() === '' || f.description.length > 1024)
    reasons.push('description: required, 1 to 1024 characters');
  const tools = f.required_tools ?? [];
  if (!Array.isArray(tools) || !tools.every((t) => typeof t === 'string' && TOOL.test(t)))
    reasons.push('required_tools: a list of tool names like workspace.read_text');
  return reasons;
}

/** Validates one package directory: the skill, or every reason it is refused. */
export function validateSkillPackage(dir: string): { skill: LoadedSkill | null; reasons: string[] } {
  const reasons: string[] = [];
  const file = path.join(dir, 'SKILL.md');
  if (!fs.existsSync(file)) return { skill: null, reasons: ['SKILL.md is missing'] };
  const bytes = fs.readFileSync(file);
  if (bytes.length > MAX_SKILL_BYTES)
    reasons.push(`SKILL.md is ${bytes.length} bytes; the limit is ${MAX_SKILL_BYTES}`);
  const text = bytes.toString('utf8').replace(/\r\n/g, '\n');
  const m = /^---\n([\s\S]*?)\n---\n?([\s\S]*)$/.exec(text);
  if (!m) return { skill: null, reasons: [...reasons, 'SKILL.md must start with YAML front matter between --- lines'] };
  let fm: unknown;
  try {
    fm = parse(m[1]);
  } catch (e) {
    return {
      skill: null,
      reasons: [...reasons, `front matter is not valid YAML: ${(e as Error).message.split('\n')[0]}`],
    };
  }
  if (!fm || typeof fm !== 'object' || Array.isArray(fm))
    return { skill: null, reasons: [...reasons, 'front matter must be a mapping'] };
  const f = fm as Record<string, unknown>;
  reasons.push(...frontMatterProblems(f));
  const version = typeof f.version === 'number' ? String(f.version) : f.version;
  const tools = f.required_tools ?? [];
  const instructions = m[2].trim();
  if (instructions === '') reasons.push('SKILL.md has no instructions after the front matter');
  const references = filesOf(dir, 'references', reasons);
  const templates = filesOf(dir, 'templates', reasons);
  const injection = scanForInjection(`${typeof f.description === 'string' ? f.description : ''}\n${instructions}`);
  if (injection.length) reasons.push(`injection patterns found: ${injection.join(', ')}`);
  if (reasons.length) return { skill: null, reasons };
  return {
    skill: {
      name: f.name as string,
      version: version as string,
      description: (f.description as string).trim(),
      requiredTools: [...(tools as string[])],
      source: 'package',
      instructions,
      sha256: createHash('sha256').update(instructions).digest('hex'),
      references,
      templates,
    },
    reasons: [],
  };
}

/** Every package directory under `skillsDir`: the valid skills and the refused ones (with reasons). */
export function loadSkillPackages(skillsDir: string): { skills: LoadedSkill[]; refused: RefusedSkill[] } {
  const skills: LoadedSkill[] = [];
  const refused: RefusedSkill[] = [];
  if (!fs.existsSync(skillsDir)) return { skills, refused };
  for (const e of fs.readdirSync(skillsDir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (!e.isDirectory()) continue;
    const dir = path.join(skillsDir, e.name);
    const { skill, reasons } = validateSkillPackage(dir);
    if (!skill) refused.push({ dir, reasons });
    else if (skills.some((s) => s.name === skill.name))
      refused.push({ dir, reasons: [`name ${skill.name} is already used by another package`] });
    else skills.push(skill);
  }
  return { skills, refused };
}

/** A prompt of an MCP server, exposed as a read-only skill. */
export interface PromptProvider {
  readonly serverId: string;
  list(): Promise<{ name: string; description: string; arguments: { name: string; required: boolean }[] }[]>;
  get(name: string): Promise<string>;
}

/**
 * The process's skills: SKILL.md packages read once at startup, plus MCP prompts without required
 * arguments as read-only skills named `mcp-<server>-<prompt>` (their text is external, untrusted).
 */
export class StaticSkillSource implements SkillSource {
  private constructor(
    private readonly skills: readonly LoadedSkill[],
    private readonly prompts: ReadonlyMap<string, { provider: PromptProvider; prompt: string; summary: SkillSummary }>,
  ) {}

  static async create(
    skills: readonly LoadedSkill[],
    providers: readonly PromptProvider[],
  ): Promise<StaticSkillSource> {
    const prompts = new Map<string, { provider: PromptProvider; prompt: string; summary: SkillSummary }>();
    for (const provider of providers) {
      const listed = await provider.list().catch(() => []);
      for (const p of listed) {
        if (p.arguments.some((a) => a.required)) continue; // needs arguments a skill load cannot supply
        const name = `mcp-${provider.serverId}-${p.name}`
          .toLowerCase()
          .replace(/[^a-z0-9-]/g, '-')
          .slice(0, 64);
        if (skills.some((s) => s.name === name) || prompts.has(name)) continue;
        prompts.set(name, {
          provider,
          prompt: p.name,
          summary: {
            name,
            version: '0.0.0-mcp',
            description: (p.description || `prompt ${p.name} of MCP server ${provider.serverId}`).slice(0, 1024),
            requiredTools: [],
            source: 'mcp_prompt',
          },
        });
      }
    }
    return new StaticSkillSource(skills, prompts);
  }

  list(): readonly SkillSummary[] {
    const all: SkillSummary[] = [
      ...this.skills.map(({ name, version, description, requiredTools, source }) => ({
        name,
        version,
        description,
        requiredTools,
        source,
      })),
      ...[...this.prompts.values()].map((p) => p.summary),
    ];
    return all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async load(name: string): Promise<LoadedSkill | null> {
    const pkg = this.skills.find((s) => s.name === name);
    if (pkg) return pkg;
    const p = this.prompts.get(name);
    if (!p) return null;
    const instructions = (await p.provider.get(p.prompt)).trim();
    return {
      ...p.summary,
      instructions,
      sha256: createHash('sha256').update(instructions).digest('hex'),
      references: [],
      templates: [],
    };
  }
}
