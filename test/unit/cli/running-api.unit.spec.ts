import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadSettings } from '../../../src/config/settings';
import { announceApi, apiFile, findRunningApi } from '../../../src/cli/running-api';

/** Which announced API `agent run` picks: one that is alive, ready, and whose auth mode it can meet. */
describe('findRunningApi', () => {
  let dataDir: string;
  let server: http.Server;
  let url: string;
  const settings = (env: NodeJS.ProcessEnv = {}) => loadSettings({ AGENT_DATA_DIR: dataDir, ...env });

  beforeAll(async () => {
    server = http.createServer((_req, res) => res.writeHead(200).end('{}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://0.0.0.0:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => (dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'running-api-'))));
  afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('uses a ready dev-mode API announced on the same data directory, dialling a wildcard host locally', async () => {
    const withdraw = announceApi(dataDir, url, 'dev');
    const found = await findRunningApi(settings(), {});
    expect(found).toEqual({ base: url.replace('0.0.0.0', '127.0.0.1'), token: null });
    withdraw();
    expect(fs.existsSync(apiFile(dataDir))).toBe(false);
    expect(await findRunningApi(settings(), {})).toBeNull();
  });

  it('ignores a token-mode API when the CLI has no AGENT_API_TOKEN, even if its own AUTH_MODE is dev', async () => {
    announceApi(dataDir, url, 'token');
    expect(await findRunningApi(settings(), {})).toBeNull();
    expect(await findRunningApi(settings(), { AGENT_API_TOKEN: 't0k' })).toMatchObject({ token: 't0k' });
  });

  it('ignores an announcement whose process is gone, and treats one without a mode as token mode', async () => {
    fs.mkdirSync(path.dirname(apiFile(dataDir)), { recursive: true });
    fs.writeFileSync(apiFile(dataDir), JSON.stringify({ pid: 2 ** 22 + 12345, url, authMode: 'dev' }));
    expect(await findRunningApi(settings(), {})).toBeNull();
    fs.writeFileSync(apiFile(dataDir), JSON.stringify({ pid: process.pid, url }));
    expect(await findRunningApi(settings(), {})).toBeNull();
  });

  it('fails loudly when the API named in AGENT_API_URL does not answer', async () => {
    await expect(findRunningApi(settings(), { AGENT_API_URL: 'http://127.0.0.1:9' })).rejects.toThrow(
      /the API at http:\/\/127\.0\.0\.1:9 \(AGENT_API_URL\) is not ready/,
    );
  });
});
