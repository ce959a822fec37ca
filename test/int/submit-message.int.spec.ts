import { createTestDb, type TestDb } from '../support/test-db';
import { createTestPlatform, type TestPlatform } from '../support/platform';
import { CreateSessionCommand } from '../../src/application/sessions/create-session';
import { SubmitMessageCommand } from '../../src/application/runs/submit-message';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import { ConflictError, NotFoundError, SecretInPayloadError, ValidationError } from '../../src/domain/errors';

let tdb: TestDb;
let t: TestPlatform;
beforeAll(async () => {
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url);
});
afterAll(async () => {
  await t.close();
  await tdb.drop();
});

const eventCount = async () =>
  Number((await t.platform.db.query<{ n: string }>('SELECT count(*) AS n FROM events')).rows[0].n);

describe('submitting a message', () => {
  it('creates exactly one run, and a repeated idempotency key returns the original run', async () => {
    const s = await t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    const a = await t.commands.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, s.id, 'hello', 'key-1'));
    const b = await t.commands.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, s.id, 'hello', 'key-1'));
    expect(b.runId).toBe(a.runId);
    expect(b.replayed).toBe(true);
    const runs = await t.platform.db.query('SELECT id FROM runs WHERE session_id = $1', [s.id]);
    expect(runs.rowCount).toBe(1);
    await expect(
      t.commands.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, s.id, 'different', 'key-1')),
    ).rejects.toBeInstanceOf(ConflictError);
  });

  it('refuses a second message while the session has an active run, naming that run', async () => {
    const s = await t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    const a = await t.commands.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, s.id, 'first'));
    const err = await t.commands
      .execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, s.id, 'second'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).details.activeRunId).toBe(a.runId);
  });

  it.each([
    ['an empty message', '   ', ValidationError],
    ['an oversized message', 'x'.repeat(32_001), ValidationError],
    ['a message carrying an API key', 'use sk-proj-abcdefghijklmnopqrstuvwxyz012345 please', SecretInPayloadError],
  ])('refuses %s before anything is stored', async (_label, text, type) => {
    const s = await t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    const before = await eventCount();
    await expect(t.commands.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, s.id, text))).rejects.toBeInstanceOf(
      type,
    );
    expect(await eventCount()).toBe(before);
  });

  it('refuses an unknown agent and an unknown session before anything is stored', async () => {
    const before = await eventCount();
    await expect(t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL, 'no-such-agent'))).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(
      t.commands.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, '00000000-0000-4000-8000-000000000000', 'hi')),
    ).rejects.toBeInstanceOf(NotFoundError);
    expect(await eventCount()).toBe(before);
  });

  it('applies AGENT_MODEL_POLICY to new runs even after the agent version was first stored', async () => {
    process.env.AGENT_MODEL_POLICY = 'fake:direct_answer';
    const again = await createTestPlatform(tdb.url);
    try {
      const { runId } = await again.submit('hi');
      expect((await again.platform.runs.get(runId, null))?.modelPolicy).toBe('fake:direct_answer');
    } finally {
      delete process.env.AGENT_MODEL_POLICY;
      await again.close();
    }
  });

  it('hides another tenant’s session', async () => {
    const s = await t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    const other = { ...LOCAL_PRINCIPAL, tenantId: 'other' };
    await expect(t.commands.execute(new SubmitMessageCommand(other, s.id, 'hi'))).rejects.toBeInstanceOf(NotFoundError);
  });
});
