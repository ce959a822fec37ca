import * as path from 'node:path';
import type { Settings } from '../config/settings';
import { sessionWorkspace } from '../tools/workspace/paths';

/**
 * A session's workspace directory as the workspace tools see it (`<data>/workspaces/<tenant>/<session>`),
 * created on first use: for harnesses (the memory eval suite) that put a file there before a run.
 */
export function sessionWorkspaceDir(settings: Pick<Settings, 'dataDir'>, tenantId: string, sessionId: string) {
  return sessionWorkspace(path.join(settings.dataDir, 'workspaces'), tenantId, sessionId);
}
