import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadAgentFiles } from '../../adapters/config/yaml-agent-catalog';
import { isolationUnavailable } from '../../adapters/mcp/isolation';
import { loadMcpConfig } from '../../adapters/mcp/mcp-config';
import { loadProviderRegistry } from '../../adapters/model/profiles';
import type { Settings } from '../../config/settings';
import { whichSync } from '../prerequisites';
import { fail, messageOf, pass, type CheckResult } from './check';

/** The profile a model policy resolves to, or null for the offline providers (demo, fake:*). */
function profileOf(policy: string, policies: Readonly<Record<string, { profile: string }>>): string | null {
  if (policy === 'demo' || policy.startsWith('fake:') || policy === 'fake') return null;
  if (policies[policy]) return policies[policy].profile;
  const colon = policy.indexOf(':');
  return colon > 0 ? policy.slice(0, colon) : policy;
}

/**
 * Provider keys: for each model policy an agent uses, the credential its profile names is set
 * (reported as set or missing, never shown).
 */
export function checkProviderKeys(settings: Settings, env: NodeJS.ProcessEnv = process.env): CheckResult[] {
  let policies: string[];
  let registry: ReturnType<typeof loadProviderRegistry>;
  try {
    policies = [...new Set(loadAgentFiles(path.join(settings.configDir, 'agents')).map((a) => a.modelPolicy))];
    registry = loadProviderRegistry(path.join(settings.configDir, 'providers'), env);
  } catch (e) {
    return [fail('providers', `configuration does not load: ${messageOf(e)}`, `fix the file named above`)];
  }
  return policies.map((policy) => {
    const name = `model policy ${policy}`;
    const profileName = profileOf(policy, registry.policies);
    if (profileName === null) return pass(name, 'offline provider, no key needed');
    const profile = registry.profiles.find((p) => p.name === profileName);
    if (!profile) return fail(name, `no provider profile "${profileName}"`, `add config/providers/${profileName}.yaml`);
    if (!profile.credentialEnv) return pass(name, `${profile.name}: keyless endpoint`);
    return env[profile.credentialEnv]?.trim()
      ? pass(name, `${profile.name}: ${profile.credentialEnv} is set`)
      : fail(
          name,
          `${profile.name}: ${profile.credentialEnv} is not set`,
          `put ${profile.credentialEnv}=… in .env, or use model_policy: demo`,
        );
  });
}

/** MCP servers: every stdio server's command can be found and its cwd exists (the API starts them). */
export function checkMcpServers(settings: Settings, env: NodeJS.ProcessEnv = process.env): CheckResult[] {
  let servers: ReturnType<typeof loadMcpConfig>['servers'];
  try {
    servers = loadMcpConfig(settings.configDir, env).servers;
  } catch (e) {
    return [fail('mcp', `config/mcp.yaml does not load: ${messageOf(e)}`, 'fix config/mcp.yaml (docs/mcp.md)')];
  }
  if (servers.length === 0) return [pass('mcp', 'no servers configured')];
  return servers.map((s) => {
    const name = `mcp ${s.id}`;
    if (s.transport === 'http') return pass(name, `http server at ${new URL(s.url ?? '').host} (reached by the API)`);
    if (s.cwd && !fs.existsSync(s.cwd))
      return fail(name, `its working directory ${s.cwd} does not exist`, `fix transport.cwd in config/mcp.yaml`);
    // An isolating profile whose launcher is missing: the platform refuses to start (ADR 0048).
    const unavailable = isolationUnavailable(s, { hidden: [] });
    if (unavailable) return fail(name, `isolation ${unavailable}`, 'install the launcher, or change isolation');
    const found = whichSync(s.command, env);
    const isolated = s.isolation.profile === 'none' ? '' : ` (isolation ${s.isolation.profile})`;
    return found
      ? pass(name, `command ${found} found${isolated}`)
      : fail(
          name,
          `command ${s.command} not found; the server is left out and its tools unavailable`,
          `install ${path.basename(s.command)} (or fix transport.command in config/mcp.yaml)`,
        );
  });
}
