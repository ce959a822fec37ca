import type { Settings } from '../../config/settings';
import type { CheckResult } from './check';
import { checkMcpServers, checkProviderKeys } from './config-checks';
import { checkArtifactStore } from './artifact-check';
import { checkDatabase } from './database-check';
import { checkDataDir, checkNode, checkPort } from './host-checks';
import { checkSandbox } from './sandbox-check';

export type { CheckResult } from './check';

/**
 * `agent doctor`'s checks, in the order a new user meets them (docs/adr/0028-first-ten-minutes.md).
 * Each check reports its own failure as a line with a fix; none throws.
 */
export async function runDoctor(settings: Settings): Promise<CheckResult[]> {
  return [
    checkNode(),
    checkDataDir(settings),
    ...(await checkDatabase(settings)),
    await checkArtifactStore(settings),
    ...(await checkSandbox(settings)),
    ...checkProviderKeys(settings),
    ...checkMcpServers(settings),
    await checkPort(settings),
  ];
}
