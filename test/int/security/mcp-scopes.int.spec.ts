import * as fs from 'node:fs';
import * as path from 'node:path';
import { SubmitMessageCommand } from '../../../src/application/runs/submit-message';
import { CreateSessionCommand } from '../../../src/application/sessions/create-session';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import type { Principal } from '../../../src/domain/principal';
import type { Worker } from '../../../src/runtime/worker';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { createTestDb, type TestDb } from '../../support/test-db';
import { EVERYTHING, makeConfigDir, MCP_AGENT } from '../mcp/mcp-support';

// ADR 0032: an MCP tool whose required_scopes fall outside the run's recorded set is hidden from the
// model and denied if called anyway; in scope, it runs.
const MCP_YAML = `
version: 1
servers:
  - id: everything
    transport:
      type: stdio
      command: \${node}
      args: ['${EVERYTHING}', 'stdio']
      env_allowlist: []
    call_timeout_seconds: 20
    tools:
      echo: { side_effect: read, risk: low, idempotency: read_only, required_scopes: [mcp.echo] }
`;

let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let config: { dir: string; remove(): void };

const principal = (scopes: string[]): Principal => ({
  tenantId: 'tenant-m',
  principalId: 'mia',
  roles: new Set(),
  scopes: new Set(scopes),
});

async function run(p: Principal, text: string, modelPolicy?: string) {
  const { id } = await t.commands.execute(new CreateSessionCommand(p, 'mcp_demo'));
  const overrides = modelPolicy ? { modelPolicy } : {};
  const r = await t.commands.execute(new SubmitMessageCommand(p, id, text, null, overrides));
  const status = await t.waitForTerminal(r.runId, 30_000);
  const events = await t.platform.store.listRunEvents(r.runId, p);
  return { status, events, finalText: (await t.platform.runs.get(r.runId, null))?.finalText };
}
const of = <T extends StoredEvent['type']>(events: StoredEvent[], type: T) =>
  events.filter((e): e is Extract<StoredEvent, { type: T }> => e.type === type);

beforeAll(async () => {
  config = makeConfigDir(MCP_YAML, { 'mcp_demo.yaml': MCP_AGENT });
  fs.writeFileSync(
    path.join(config.dir, 'model-fixtures', 'forged_mcp_echo.yaml'),
    `name: forged_mcp_echo
description: calls mcp.everything.echo whether or not it was offered
turns:
  - tool_calls:
      - name: mcp.everything.echo
        arguments: { message: "forged" }
  - text: "done"
`,
  );
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { configDir: config.dir, leaseSeconds: 5, pollIntervalMs: 100 });
  worker = t.platform.createWorker({ concurrency: 2, pollIntervalMs: 100, drainMs: 5000 });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await tdb?.drop();
  config?.remove();
});

describe('MCP tools and the run’s scope set', () => {
  const ask = 'call mcp.everything.echo with {"message":"hi"}';

  it('hides an out-of-scope MCP tool from the model', async () => {
    const r = await run(principal(['tools.use']), ask);
    expect(r.status).toBe('completed');
    expect(of(r.events, 'tool.call.proposed')).toEqual([]);
    expect(r.finalText).toMatch(/mcp\.everything\.echo tool .* not available/);
  });

  it('denies it missing_scope, naming the scope, when it is called anyway', async () => {
    const r = await run(principal(['tools.use']), 'echo', 'fake:forged_mcp_echo');
    expect(r.status).toBe('completed');
    expect(of(r.events, 'run.queued')[0].data.scopes).toEqual(['tools.use']);
    const denied = of(r.events, 'tool.call.denied');
    expect(denied.map((e) => e.data.reasonCode)).toEqual(['missing_scope']);
    expect(denied[0].data.explanation).toContain('mcp.echo');
    expect(of(r.events, 'tool.call.started')).toEqual([]);
  });

  it('offers and runs it when the run holds the scope', async () => {
    const r = await run(principal(['tools.use', 'mcp.echo']), ask);
    expect(r.status).toBe('completed');
    expect(of(r.events, 'tool.call.denied')).toEqual([]);
    expect(of(r.events, 'tool.call.completed')).toHaveLength(1);
  });
});
