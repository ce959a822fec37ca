/* eslint-disable @typescript-eslint/no-explicit-any -- compares documented JSON with live JSON */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureBuilt, ROOT, startAgent, waitFor, type Proc } from '../../support/processes';
import { createTestDb, type TestDb } from '../../support/test-db';

/**
 * The examples of docs/api.md (and the README's curl session) against a running instance —
 * `agent api` and `agent worker` processes over a fresh database — as a reader would run them:
 *
 * - every ```sh block of curl commands runs through bash and the real curl, `localhost:3000`
 *   pointed at the instance; a `# …` line after a command (or a trailing `# …`) is its output:
 *   JSON where `…` stands for anything, a leading status code (`# 202 {…}`), or an SSE stream
 *   (`# SSE … until run.completed`). A placeholder like `5b0c…` is the id the output showed where
 *   it first appears, and later commands use that id.
 * - the ```json blocks and the SSE frame are the shapes of real responses (same keys, same kinds
 *   of values, the same literal strings): the error envelope, an artifact's metadata, the integrity
 *   error of a tampered artifact, and a persisted frame of the stream.
 */

type Bindings = Map<string, string>;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Fenced blocks of a Markdown file: language and text. */
function blocks(file: string): { lang: string; text: string }[] {
  const out: { lang: string; text: string }[] = [];
  const re = /^```(\w*)\n([\s\S]*?)^```$/gm;
  for (const m of fs.readFileSync(path.join(ROOT, file), 'utf8').matchAll(re)) out.push({ lang: m[1], text: m[2] });
  return out;
}

/** Documented JSON with `…` for "anything": parsed, with `…` outside strings as a wildcard marker. */
const ANY = '\u0000any';
function parseLoose(text: string): unknown {
  let out = '';
  let inString = false;
  const stack: string[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i];
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    if (c === '{' || c === '[') stack.push(c);
    if (c === '}' || c === ']') stack.pop();
    const marker = '"\\u0000any"'; // the JSON spelling of ANY
    out += c === '…' ? (stack.at(-1) === '{' ? `${marker}:${marker}` : marker) : c;
  }
  return JSON.parse(out);
}

const PLACEHOLDER = /([0-9a-f]{4,})…/g;

/** A documented string: placeholders bind (or must equal their binding), a bare `…` is anything. */
function matchString(exp: string, act: string, bind: Bindings): boolean {
  if (!exp.includes('…')) return exp === act;
  const names: string[] = [];
  const source = exp
    .split(PLACEHOLDER)
    .map((part, i) => {
      if (i % 2 === 1) {
        names.push(`${part}…`);
        return '([0-9A-Za-z_-]+)';
      }
      return part
        .split('…')
        .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*');
    })
    .join('');
  const m = new RegExp(`^${source}$`, 's').exec(act);
  if (!m) return false;
  return names.every((n, i) => {
    const bound = bind.get(n);
    if (bound === undefined) bind.set(n, m[i + 1]);
    return (bound ?? m[i + 1]) === m[i + 1];
  });
}

const ISO_DATE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/**
 * Where `actual` departs from `expected`. `shape`: numbers and ISO dates need only be of their kind
 * (an illustration's values); otherwise they must be equal. Objects without `…` have exactly their keys.
 */
function differences(expected: unknown, actual: unknown, bind: Bindings, shape: boolean, at = '$'): string[] {
  if (expected === ANY) return [];
  if (typeof expected === 'string') {
    if (typeof actual !== 'string') return [`${at}: expected a string, got ${JSON.stringify(actual)}`];
    if (shape && ISO_DATE.test(expected)) return ISO_DATE.test(actual) ? [] : [`${at}: ${actual} is not a date`];
    return matchString(expected, actual, bind)
      ? []
      : [`${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
  }
  if (typeof expected === 'number')
    return (shape ? typeof actual === 'number' : actual === expected)
      ? []
      : [`${at}: expected ${expected}, got ${JSON.stringify(actual)}`];
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${at}: expected an array`];
    if (expected.length === 1 && expected[0] === ANY) return [];
    if (expected.length !== actual.length) return [`${at}: expected ${expected.length} items, got ${actual.length}`];
    return expected.flatMap((e, i) => differences(e, actual[i], bind, shape, `${at}[${i}]`));
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return [`${at}: expected an object`];
    const keys = Object.keys(expected).filter((k) => k !== ANY);
    const open = ANY in expected;
    const extra = open ? [] : Object.keys(actual).filter((k) => !keys.includes(k));
    return [
      ...extra.map((k) => `${at}.${k}: not documented`),
      ...keys.flatMap((k) =>
        k in actual
          ? differences((expected as any)[k], (actual as any)[k], bind, shape, `${at}.${k}`)
          : [`${at}.${k}: missing`],
      ),
    ];
  }
  return expected === actual ? [] : [`${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
}

interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
}
function parseFrames(text: string): SseFrame[] {
  return text
    .split(/\n\n/)
    .map((f) => {
      const frame: SseFrame = {};
      for (const line of f.split('\n')) {
        const m = /^(id|event|data): ?(.*)$/.exec(line);
        if (m) frame[m[1] as keyof SseFrame] = m[2];
      }
      return frame;
    })
    .filter((f) => f.event !== undefined);
}

/** One documented command and what the documentation says it prints. */
interface Example {
  readonly command: string;
  readonly expected: string | null;
}
function examplesOf(text: string): Example[] {
  const examples: { command: string; expected: string | null }[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (line.startsWith('#')) {
      const last = examples.at(-1);
      if (last) last.expected = line.replace(/^#\s?/, '');
      continue;
    }
    if (line === '') continue;
    pending += pending ? ` ${line.trim()}` : line;
    if (pending.endsWith('\\')) {
      pending = pending.slice(0, -1).trimEnd();
      continue;
    }
    const trailing = /\s{2,}#\s(.*)$/.exec(pending);
    examples.push({
      command: trailing ? pending.slice(0, trailing.index).trim() : pending,
      expected: trailing ? trailing[1] : null,
    });
    pending = '';
  }
  return examples;
}

let tdb: TestDb;
let dataDir: string;
let base: string;
const procs: Proc[] = [];
const streams: string[] = [];

beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'docs-examples-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const env = { DATABASE_URL: tdb.url, AGENT_DATA_DIR: dataDir, AGENT_POLL_INTERVAL_MS: '300' };
  procs.push(startAgent(['api'], { ...env, PORT: String(port) }), startAgent(['worker'], env));
  await waitFor('the API', async () => (await fetch(`${base}/health/ready`)).status === 200, 90_000).catch(
    (e: Error) => {
      throw new Error(`${e.message}\n${procs.map((p) => p.output()).join('\n')}`);
    },
  );
}, 240_000);
afterAll(async () => {
  for (const p of procs) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => p.exited));
  await tdb?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Runs one documented command through bash and curl against the instance; checks its output. */
function run(example: Example, bind: Bindings): string[] {
  let command = example.command.replaceAll('localhost:3000', base.replace('http://', ''));
  for (const [placeholder, value] of bind) command = command.replaceAll(placeholder, value);
  if (command.includes('…')) return [`${example.command}: uses a placeholder no earlier output defined`];
  const sse = example.expected !== null && /^SSE\b/.test(example.expected);
  const out = execFileSync('bash', ['-c', sse ? `${command} --max-time 60` : `${command} -w '\\n%{http_code}'`], {
    encoding: 'utf8',
    timeout: 70_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (sse) {
    streams.push(out);
    const last = parseFrames(out).at(-1)?.event;
    const until = /until (\S+)/.exec(example.expected)?.[1];
    return until && last !== until ? [`${example.command}: the stream ended with ${last}, not ${until}`] : [];
  }
  const cut = out.lastIndexOf('\n');
  const [body, status] = [out.slice(0, cut), Number(out.slice(cut + 1))];
  if (example.expected === null) return status < 400 ? [] : [`${example.command}: answered ${status}`];
  const m = /^(\d{3}) (.*)$/.exec(example.expected);
  const problems = m && Number(m[1]) !== status ? [`${example.command}: answered ${status}, documented ${m[1]}`] : [];
  const diff = differences(parseLoose(m ? m[2] : example.expected), JSON.parse(body), bind, false);
  return [...problems, ...diff.map((d) => `${example.command}: ${d}`)];
}

async function api(method: string, url: string, body?: unknown): Promise<any> {
  const r = await fetch(`${base}${url}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

/** Submits `text` in `session` and waits for its run to end. */
async function turn(session: string, text: string): Promise<string> {
  const m = await api('POST', `/v1/sessions/${session}/messages`, { content: [{ type: 'text', text }] });
  const runId = String(m.body.run_id);
  await waitFor('the run to end', async () => {
    const r = await api('GET', `/v1/runs/${runId}`);
    return ['completed', 'failed', 'cancelled'].includes(r.body.status);
  });
  return runId;
}

describe('the examples of docs/api.md against a running instance', () => {
  it('runs every curl session of docs/api.md and the README and gets what they show', () => {
    const sessions = [...blocks('docs/api.md'), ...blocks('README.md')].filter(
      (b) => b.lang === 'sh' && /^curl /m.test(b.text) && !/^(?!curl |\s|#)\S/m.test(b.text),
    );
    expect(sessions.length).toBeGreaterThanOrEqual(2);
    const problems = sessions.flatMap((b) => {
      const bind: Bindings = new Map();
      return examplesOf(b.text).flatMap((e) => run(e, bind));
    });
    expect(problems).toEqual([]);
    expect(streams.length).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it('shows a persisted SSE frame as the stream sends it', () => {
    const doc = blocks('docs/api.md').find((b) => b.lang === '' && b.text.startsWith('id: '))!;
    const [example] = parseFrames(doc.text);
    const live = streams.flatMap(parseFrames).find((f) => f.event === example.event);
    expect(live).toBeDefined();
    expect(differences(parseLoose(example.data!), JSON.parse(live!.data!), new Map(), true)).toEqual([]);
    expect(live!.id).toBe(String(JSON.parse(live!.data!).sequence));
  });

  it('shows the error envelope, an artifact and the integrity error as the API answers them', async () => {
    const json = blocks('docs/api.md').filter((b) => b.lang === 'json');
    const example = (needle: string) => parseLoose(json.find((b) => b.text.includes(needle))!.text);
    const invalid = await api('POST', '/v1/sessions', { bogus: 1 });
    expect(invalid.status).toBe(400);
    expect(differences(example('"validation_error"'), invalid.body, new Map(), true)).toEqual([]);

    const session = (await api('POST', '/v1/sessions', {})).body.id as string;
    await turn(session, 'write # Quarterly report to report.md');
    const exported = await turn(session, 'export report.md');
    const [artifact] = (await api('GET', `/v1/runs/${exported}/artifacts`)).body.items;
    expect(differences(example('"content_url"'), artifact, new Map(), true)).toEqual([]);
    expect((await api('GET', `/v1/artifacts/${String(artifact.id)}`)).body).toEqual(artifact);

    // Tamper with the stored bytes: the download is refused with the documented envelope.
    const blob = path.join(
      dataDir,
      'artifacts',
      'sha256',
      artifact.sha256.slice(0, 2),
      artifact.sha256.slice(2, 4),
      artifact.sha256,
    );
    fs.chmodSync(blob, 0o600);
    // Same size, other bytes: what only the hash can tell (a size change is caught before hashing).
    fs.writeFileSync(blob, Buffer.alloc(artifact.size_bytes, 'x'));
    const tampered = await api('GET', artifact.content_url);
    expect(tampered.status).toBe(500);
    expect(differences(example('"artifact_integrity_error"'), tampered.body, new Map(), true)).toEqual([]);
  }, 60_000);
});
