/* eslint-disable @typescript-eslint/no-require-imports */

/**
 * Benchmark suites by name: `node dist/bench/run.js <name>` (or `npm run bench -- <name>`). Add new
 * suites here. Each is loaded only when asked for, so a bench process carries only its own suite's
 * modules (its memory is part of what some suites measure, e.g. what a fork costs).
 */
const suites: Record<string, () => Promise<void>> = {
  append: () => (require('./append.bench') as typeof import('./append.bench')).runAppendBench(),
  commands: () => (require('./commands.bench') as typeof import('./commands.bench')).runCommandsBench(),
  context: () => (require('./context.bench') as typeof import('./context.bench')).runContextBench(),
  artifacts: () => (require('./artifacts.bench') as typeof import('./artifacts.bench')).runArtifactsBench(),
  notifications: () =>
    (require('./notifications.bench') as typeof import('./notifications.bench')).runNotificationsBench(),
  delegation: () => (require('./delegation.bench') as typeof import('./delegation.bench')).runDelegationBench(),
  export: () => (require('./export.bench') as typeof import('./export.bench')).runExportBench(),
  'mcp-isolation': () =>
    (require('./mcp-isolation.bench') as typeof import('./mcp-isolation.bench')).runMcpIsolationBench(),
  memory: () => (require('./memory.bench') as typeof import('./memory.bench')).runMemoryBench(),
  scale: () => (require('./scale.bench') as typeof import('./scale.bench')).runScaleBench(),
  peers: () => (require('./peers.bench') as typeof import('./peers.bench')).runPeersBench(),
  reads: () => (require('./reads.bench') as typeof import('./reads.bench')).runReadsBench(),
  runs: () => (require('./runs.bench') as typeof import('./runs.bench')).runRunsBench(),
  scheduler: () => (require('./scheduler.bench') as typeof import('./scheduler.bench')).runSchedulerBench(),
  sandbox: () => (require('./sandbox.bench') as typeof import('./sandbox.bench')).runSandboxBench(),
  startup: () => (require('./startup.bench') as typeof import('./startup.bench')).runStartupBench(),
  sse: () => (require('./sse.bench') as typeof import('./sse.bench')).runSseBench(),
  tracing: () => (require('./tracing.bench') as typeof import('./tracing.bench')).runTracingBench(),
};

async function main(): Promise<void> {
  const name = process.argv[2];
  const suite = name === undefined ? undefined : suites[name];
  if (!suite) {
    console.error(`usage: npm run bench -- <suite>\nsuites: ${Object.keys(suites).join(', ')}`);
    process.exitCode = 2;
    return;
  }
  await suite();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
