import * as fs from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  const pg = (globalThis as { __agentTestPg?: { stop(): Promise<void>; dataDir: string } }).__agentTestPg;
  if (!pg) return;
  await pg.stop();
  fs.rmSync(pg.dataDir, { recursive: true, force: true });
}
