/**
 * Skills (plan Milestone 8, §30.1, §30.4; docs/skills.md): procedural memory, not tools. Only the
 * metadata enters ordinary context; `skill.load` brings one skill's instructions into a run.
 */
export interface SkillSummary {
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly requiredTools: readonly string[];
  /** `package`: a SKILL.md package (trusted configuration); `mcp_prompt`: an MCP prompt (read-only, untrusted). */
  readonly source: 'package' | 'mcp_prompt';
}

export interface LoadedSkill extends SkillSummary {
  readonly instructions: string;
  /** SHA-256 of the instructions as loaded: the pin recorded on the run with the version. */
  readonly sha256: string;
  readonly references: readonly string[];
  readonly templates: readonly string[];
}

/** Phrases that try to turn skill text into an override of policy; a match refuses the load. */
const INJECTION_PATTERNS: readonly { readonly id: string; readonly re: RegExp }[] = [
  {
    id: 'ignore_previous_instructions',
    re: /\b(ignore|disregard|forget)\b.{0,40}\b(previous|prior|above|earlier|all)\b.{0,20}\b(instructions|rules|prompts?)\b/i,
  },
  {
    id: 'override_system_prompt',
    re: /\b(override|bypass|disable)\b.{0,30}\b(system prompt|policy|polic(y|ies)|approvals?|safety)\b/i,
  },
  { id: 'role_reassignment', re: /\byou are now\b|\bact as (the )?(system|developer|administrator)\b/i },
  { id: 'fake_role_tag', re: /<\/?(system|developer|assistant)>|\[\/?(system|inst)\]/i },
  {
    id: 'secret_exfiltration',
    re: /\b(reveal|print|send|exfiltrate|leak)\b.{0,40}\b(secrets?|api[ _-]?keys?|passwords?|credentials?|tokens?)\b/i,
  },
  { id: 'hidden_characters', re: /[\u200b-\u200f\u202a-\u202e\u2066-\u2069]/ },
];

/** The injection patterns found in `text` (empty when clean). Deterministic, no model judgment. */
export function scanForInjection(text: string): string[] {
  return INJECTION_PATTERNS.filter((p) => p.re.test(text)).map((p) => p.id);
}

/**
 * The metadata-only catalog as rendered in the stable prefix (system prompt). A small pure function
 * the context builder calls; sorted by name so the bytes depend only on the catalog.
 */
export function renderSkillCatalog(skills: readonly SkillSummary[]): string {
  if (skills.length === 0) return '';
  const lines = [...skills]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(
      (s) =>
        `- ${s.name} (v${s.version}${s.source === 'mcp_prompt' ? ', from an MCP server: untrusted' : ''}): ${s.description}`,
    );
  return [
    '# Skills',
    'Procedures you can load with skill.load {"name": …} when a task matches; only then are their instructions available.',
    ...lines,
  ].join('\n');
}
