import { runAppendBench } from './append.bench';
import { runContextBench } from './context.bench';
import { runArtifactsBench } from './artifacts.bench';
import { runExportBench } from './export.bench';
import { runRunsBench } from './runs.bench';
import { runSandboxBench } from './sandbox.bench';
import { runSseBench } from './sse.bench';
import { runTracingBench } from './tracing.bench';

/** Benchmark suites by name: `node dist/bench/run.js <name>` (or `npm run bench -- <name>`). Add new suites here. */
const suites: Record<string, () => Promise<void>> = {
  append: runAppendBench,
  context: runContextBench,
  artifacts: runArtifactsBench,
  export: runExportBench,
  runs: runRunsBench,
  sandbox: runSandboxBench,
  sse: runSseBench,
  tracing: runTracingBench,
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
