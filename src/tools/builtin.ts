import type { ArtifactStore } from '../ports/artifact-store';
import type { Tool } from '../ports/tool';
import { createArtifactExportTool } from './artifacts/export-tool';
import type { DemoWriteLog } from '../ports/tool-records';
import { createAskUserTool } from './conversation/ask-user';
import { createDemoExternalWriteTool } from './demo/external-write';
import { createCalculatorTool } from './math/calculator-tool';
import { createCurrentTimeTool } from './system/current-time';
import { createPlanUpdateTool } from './plan/plan-update';
import { createWorkspaceTools } from './workspace/workspace-tools';

/** The tools every deployment ships: pure, read-only, and safe to run in parallel. */
export function createBuiltinTools(): Tool[] {
  return [createCalculatorTool(), createCurrentTimeTool()];
}

export interface PlatformToolOptions {
  /** Root of the per-session workspaces (`$AGENT_DATA_DIR/workspaces`). */
  readonly workspaceRoot: string;
  /** Where `demo.external_write` records what it would have sent. */
  readonly demoWrites: DemoWriteLog;
  /** Where `artifact.export` copies workspace files; without it the tool is not offered. */
  readonly artifacts?: ArtifactStore;
}

/** Every builtin tool (plan §8.2 roster so far): the pure ones plus workspace, demo write and ask_user. */
export function createPlatformTools(opts: PlatformToolOptions): Tool[] {
  return [
    ...createBuiltinTools(),
    ...createWorkspaceTools({ root: opts.workspaceRoot }),
    createDemoExternalWriteTool(opts.demoWrites),
    createAskUserTool(),
    ...(opts.artifacts ? [createArtifactExportTool({ workspaceRoot: opts.workspaceRoot, store: opts.artifacts })] : []),
    // Optional: an agent uses it only when `plan.update` is in its enabled_tools.
    createPlanUpdateTool(),
  ];
}
