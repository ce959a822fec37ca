/* eslint-disable @typescript-eslint/no-explicit-any -- walks an OpenAPI document and Nest's route metadata */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RequestMethod } from '@nestjs/common';
import { HTTP_CODE_METADATA, METHOD_METADATA, PATH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { MetadataScanner } from '@nestjs/core';
import Ajv from 'ajv';
import { PUBLIC_KEY, SCOPE_KEY } from '../../../src/api/auth/decorators';
import { AppModule } from '../../../src/composition/app.module';
import { addTokenToFile } from '../../../src/composition/http';
import { createTestDb, type TestDb } from '../../support/test-db';
import { startApi, type ApiHarness } from './api-harness';

/** One route as Nest registers it, read from the controllers' metadata (what the router is built from). */
interface Route {
  readonly method: string;
  readonly path: string;
  readonly handler: string;
  readonly scope: string | undefined;
  readonly public: boolean;
  readonly successCode: number | null;
  readonly uuidParams: string[];
  readonly nameParams: string[];
  readonly body: boolean;
  readonly query: boolean;
}

const VERBS: Partial<Record<RequestMethod, string>> = {
  [RequestMethod.GET]: 'get',
  [RequestMethod.POST]: 'post',
  [RequestMethod.PUT]: 'put',
  [RequestMethod.DELETE]: 'delete',
  [RequestMethod.PATCH]: 'patch',
};

const join = (...parts: string[]) =>
  `/${parts
    .flatMap((p) => p.split('/'))
    .filter((p) => p !== '')
    .join('/')}`.replace(/:([A-Za-z_]+)/g, '{$1}');

function routesOf(controllers: readonly (new (...args: any[]) => unknown)[]): Route[] {
  const scanner = new MetadataScanner();
  return controllers.flatMap((ctl) => {
    const base = (Reflect.getMetadata(PATH_METADATA, ctl) as string | undefined) ?? '';
    return scanner.getAllMethodNames(ctl.prototype).flatMap((name) => {
      const fn = ctl.prototype[name] as object;
      const verb = Reflect.getMetadata(METHOD_METADATA, fn) as RequestMethod | undefined;
      const sub = Reflect.getMetadata(PATH_METADATA, fn) as string | undefined;
      if (verb === undefined || sub === undefined) return [];
      const args = Object.entries(
        (Reflect.getMetadata(ROUTE_ARGS_METADATA, ctl, name) ?? {}) as Record<
          string,
          { data?: string; pipes?: unknown[] }
        >,
      ).map(([key, a]) => ({ type: Number(key.split(':')[0]), ...a }));
      const params = args.filter((a) => a.type === Number(RouteParamtypes.PARAM));
      // A handler that answers through the response object sets its own status (no Nest default).
      const ownsStatus = args.some((a) => a.type === Number(RouteParamtypes.RESPONSE));
      const declared = Reflect.getMetadata(HTTP_CODE_METADATA, fn) as number | undefined;
      return [
        {
          method: VERBS[verb]!,
          path: join(base, sub),
          handler: `${ctl.name}.${name}`,
          scope: Reflect.getMetadata(SCOPE_KEY, fn) ?? Reflect.getMetadata(SCOPE_KEY, ctl),
          public: Boolean(Reflect.getMetadata(PUBLIC_KEY, fn) ?? Reflect.getMetadata(PUBLIC_KEY, ctl)),
          successCode: ownsStatus ? null : (declared ?? (verb === RequestMethod.POST ? 201 : 200)),
          // Ids are UUIDs, checked by a pipe (uuidParam); names (MCP servers, agents, principals) are not.
          uuidParams: params.filter((p) => (p.pipes ?? []).length > 0).map((p) => p.data!),
          nameParams: params.filter((p) => (p.pipes ?? []).length === 0).map((p) => p.data!),
          body: args.some((a) => a.type === Number(RouteParamtypes.BODY)),
          query: args.some((a) => a.type === Number(RouteParamtypes.QUERY)),
        },
      ];
    });
  });
}

let tdb: TestDb;
let api: ApiHarness;
let doc: any;
let routes: Route[];
let dir: string;
const tokens: Record<string, string> = {};
const ENVELOPE_REF = '#/components/schemas/ApiErrorEnvelope';

beforeAll(async () => {
  tdb = await createTestDb();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-contract-'));
  const file = path.join(dir, 'tokens.json');
  const who = (principalId: string, scopes: string[], tenantId = 'acme') =>
    addTokenToFile(file, { tenantId, principalId, scopes }, []);
  tokens.user = who('alice', ['user']);
  tokens.admin = who('root', ['user', 'admin']);
  tokens.none = who('nobody', ['tools.use'], 'other');
  tokens.flood = who('flood', ['user'], 'flood');
  api = await startApi(tdb.url, {
    authMode: 'token',
    authTokensFile: file,
    apiBodyLimitBytes: 4096,
    apiRateLimitPerMinute: 200,
  });
  doc = await (await fetch(`${api.base}/openapi.json`)).json();
  routes = routesOf(AppModule.forPlatform(api.t.platform, { http: true }).controllers as any);
});
afterAll(async () => {
  await api?.close();
  await tdb?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const operation = (r: Route) => doc.paths[r.path]?.[r.method];
const codes = (op: any) => Object.keys(op?.responses ?? {}).map(Number);

describe('GET /openapi.json against the registered routes', () => {
  it('has every registered route, with its success code, its error responses and the envelope', () => {
    expect(routes.length).toBeGreaterThan(30);
    const problems: string[] = [];
    const need = (r: Route, statuses: number[], why: string) => {
      const missing = statuses.filter((s) => !codes(operation(r)).includes(s));
      if (missing.length > 0) problems.push(`${r.handler}: ${why}: ${missing.join(', ')} not documented`);
    };
    for (const r of routes) {
      const op = operation(r);
      if (!op) {
        problems.push(`${r.handler}: ${r.method.toUpperCase()} ${r.path} is not in the document`);
        continue;
      }
      if (!op.summary) problems.push(`${r.handler}: no summary`);
      const successes = codes(op).filter((c) => c < 400);
      if (r.successCode !== null && JSON.stringify(successes) !== JSON.stringify([r.successCode]))
        problems.push(`${r.handler}: answers ${r.successCode}, the document says ${successes.join(', ') || 'nothing'}`);
      if (r.successCode === null && !successes.some((c) => c >= 200 && c < 300))
        problems.push(`${r.handler}: sets its own status but documents no 2xx`);
      if (r.scope) {
        need(r, [401, 403, 429, 500], `the guard (scope ${r.scope})`);
        if (JSON.stringify(op.security) !== JSON.stringify([{ bearer: [] }]))
          problems.push(`${r.handler}: security ${JSON.stringify(op.security)}, expected bearer`);
      } else if (r.public) {
        if (JSON.stringify(op.security) !== '[]') problems.push(`${r.handler}: public, but security is not []`);
      } else problems.push(`${r.handler}: neither a scope nor public (the guard refuses it)`);
      if (r.uuidParams.length > 0) need(r, [400, 404], `UUID parameter ${r.uuidParams.join(', ')}`);
      if (r.nameParams.length > 0 && r.path.startsWith('/v1/mcp') && !r.path.includes('{action}'))
        need(r, [404], `name parameter ${r.nameParams.join(', ')}`);
      if (r.body) need(r, [400, 413, 415], 'a JSON body');
      if (r.query) need(r, [400], 'query parameters');
      for (const [status, res] of Object.entries<any>(op.responses))
        if (Number(status) >= 400 && res.content?.['application/json']?.schema?.$ref !== ENVELOPE_REF)
          problems.push(`${r.handler}: ${status} does not carry the error envelope`);
    }
    expect(problems).toEqual([]);
  });

  it('documents only routes that exist: every documented operation is a registered route', () => {
    const registered = new Set(routes.map((r) => `${r.method} ${r.path}`));
    const documented = Object.entries<any>(doc.paths).flatMap(([p, item]) =>
      Object.keys(item)
        .filter((m) => Object.values(VERBS).includes(m))
        .map((m) => `${m} ${p}`),
    );
    expect(documented.filter((d) => !registered.has(d))).toEqual([]);
    expect(documented.length).toBe(registered.size);
  });

  it('answers a documented status with the documented envelope on every route: no credentials, a missing scope, a bad id, an unknown id', async () => {
    const ajv = new Ajv({ strict: false });
    for (const [name, schema] of Object.entries<any>(doc.components.schemas))
      ajv.addSchema(schema, `#/components/schemas/${name}`);
    const envelope = ajv.getSchema(ENVELOPE_REF)!;
    const seen: string[] = [];
    const problems: string[] = [];
    const probe = async (r: Route, what: string, token: string | null, pathOf: (p: string) => string) => {
      const res = await fetch(`${api.base}${pathOf(r.path)}`, {
        method: r.method.toUpperCase(),
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(r.body ? { 'content-type': 'application/json' } : {}),
        },
        body: r.body ? '{}' : undefined,
      });
      const text = await res.text();
      seen.push(`${r.handler} ${what} ${res.status}`);
      if (!codes(operation(r)).includes(res.status))
        problems.push(`${r.handler} ${what}: answered ${res.status}, not documented (${text.slice(0, 120)})`);
      if (res.status >= 400) {
        const body = JSON.parse(text);
        if (!envelope(body)) problems.push(`${r.handler} ${what}: ${res.status} body is not the envelope: ${text}`);
        else if (body.error.request_id !== res.headers.get('x-request-id'))
          problems.push(`${r.handler} ${what}: request_id differs from X-Request-Id`);
      }
      return res.status;
    };
    const fill = (value: (name: string) => string) => (p: string) => p.replace(/\{([A-Za-z_]+)\}/g, (_, n) => value(n));
    const plausible = fill((n) =>
      n === 'action'
        ? 'restart'
        : n.endsWith('Id') || n === 'principal_id'
          ? 'x'
          : '6f1c2a4e-0000-4000-8000-000000000000',
    );
    for (const r of routes.filter((x) => x.scope)) {
      expect(await probe(r, 'without a token', null, plausible)).toBe(401);
      expect(await probe(r, 'without the scope', tokens.none, plausible)).toBe(403);
      if (r.uuidParams.length > 0) {
        const token = r.scope === 'admin' ? tokens.admin : tokens.user;
        expect(
          await probe(
            r,
            'with a malformed id',
            token,
            fill(() => 'not-a-uuid'),
          ),
        ).toBe(400);
        if (!r.body || r.method === 'post') await probe(r, 'with an unknown id', token, plausible);
      }
    }
    expect(problems).toEqual([]);
    // Unknown ids are 404 (or, on a body route, the body's 400 first): never a 2xx or a 500.
    expect(seen.filter((s) => / with an unknown id (2\d\d|5\d\d)$/.test(s))).toEqual([]);
  }, 60_000);

  it('answers a JSON-body route with the documented 400, 413 and 415 envelopes', async () => {
    const r = routes.find((x) => x.handler === 'SessionsController.create')!;
    const post = (body: string, type: string) =>
      fetch(`${api.base}/v1/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.user}`, 'content-type': type },
        body,
      });
    const statuses = [
      (await post('{"title":', 'application/json')).status,
      (await post(JSON.stringify({ title: 'x'.repeat(8000) }), 'application/json')).status,
      (await post('hello', 'text/plain')).status,
    ];
    expect(statuses).toEqual([400, 413, 415]);
    for (const s of statuses) expect(codes(operation(r))).toContain(s);
  });

  it("answers 429 with the envelope past the tenant's request rate, as every scoped route documents", async () => {
    let last: Response | null = null;
    for (let i = 0; i < 250 && last?.status !== 429; i++)
      last = await fetch(`${api.base}/v1/sessions`, { headers: { authorization: `Bearer ${tokens.flood}` } });
    expect(last?.status).toBe(429);
    expect(last?.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await last!.json()).error.code).toBe('rate_limited');
  });
});
