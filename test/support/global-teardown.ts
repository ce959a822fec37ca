export default async function globalTeardown(): Promise<void> {
  const pg = (globalThis as { __agentTestPg?: { stop(): Promise<void> } }).__agentTestPg;
  if (pg) await pg.stop();
}
