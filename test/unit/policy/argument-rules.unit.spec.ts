import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv from 'ajv';
import { EVENT_CATALOG } from '../../../src/domain/events/catalog';
import { upcast } from '../../../src/domain/events/upcasters';
import { mcpArgumentRules, type McpServerGrant } from '../../../src/domain/mcp-grants';
import { ArgumentRuleError, checkArgumentRules, parseArgumentRules } from '../../../src/policy/argument-rules';

const DOCS_ONLY = { read_file: { path: { type: 'string', pattern: '^docs/' }, limit: { maximum: 100 } } };

describe('argument rules: parsing (a rule that is not a valid schema is refused naming the field)', () => {
  it('accepts per-tool, per-argument JSON Schemas and returns them as given; absent is none', () => {
    expect(parseArgumentRules(DOCS_ONLY)).toEqual(DOCS_ONLY);
    expect(parseArgumentRules(undefined)).toEqual({});
  });

  it.each([
    [
      { read_file: { path: { type: 'string', patern: '^docs/' } } },
      'rules.read_file.path',
      /unknown keyword: "patern"/,
    ],
    [{ read_file: { path: { type: 'string', pattern: '([' } } }, 'rules.read_file.path', /not a valid JSON Schema/],
    [{ read_file: { path: { type: 'strng' } } }, 'rules.read_file.path', /not a valid JSON Schema/],
    [{ read_file: { limit: { maximum: 'a hundred' } } }, 'rules.read_file.limit', /not a valid JSON Schema/],
    [{ read_file: { path: 'docs/' } }, 'rules.read_file.path', /must be a JSON Schema object/],
    [{ read_file: { path: { $ref: '#/x' } } }, 'rules.read_file.path', /\$ref and \$id are not allowed/],
    [{ 'Read-File': { path: { type: 'string' } } }, 'rules.Read-File', /not a tool name/],
    [{ read_file: ['path'] }, 'rules.read_file', /object of arguments/],
    [['read_file'], 'rules', /object of tools/],
    [
      JSON.parse('{"read_file": {"__proto__": {"type": "string"}}}'),
      'rules.read_file.__proto__',
      /not an argument name/,
    ],
  ])('refuses %j at %s', (raw, field, message) => {
    let err: unknown;
    try {
      parseArgumentRules(raw);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ArgumentRuleError);
    expect((err as ArgumentRuleError).field).toBe(field);
    expect((err as ArgumentRuleError).message).toMatch(message);
    expect((err as ArgumentRuleError).message.startsWith(`${field}: `)).toBe(true);
  });
});

describe('argument rules: checking a call', () => {
  const rules = parseArgumentRules(DOCS_ONLY).read_file;

  it('names the first argument that breaks its rule and what the rule says', () => {
    expect(checkArgumentRules(rules, { path: 'etc/passwd' })).toEqual({
      field: 'path',
      message: 'must match pattern "^docs/"',
    });
    expect(checkArgumentRules(rules, { path: 'docs/a.md', limit: 500 })).toEqual({
      field: 'limit',
      message: 'must be <= 100',
    });
  });

  it('passes arguments inside the rules, and does not check an argument the call does not give', () => {
    expect(checkArgumentRules(rules, { path: 'docs/a.md', limit: 100 })).toBeNull();
    expect(checkArgumentRules(rules, { other: 'x' })).toBeNull();
  });

  it('finds the rules of mcp.<server>.<tool> in the agent grants, none for other tools or servers', () => {
    const grants: McpServerGrant[] = [{ serverId: 'filesystem', default: 'allow', tools: {}, rules: DOCS_ONLY }];
    expect(mcpArgumentRules(grants, 'mcp.filesystem.read_file')).toEqual(DOCS_ONLY.read_file);
    expect(mcpArgumentRules(grants, 'mcp.filesystem.write_file')).toBeNull();
    expect(mcpArgumentRules(grants, 'mcp.everything.read_file')).toBeNull();
    expect(mcpArgumentRules(grants, 'math.calculate')).toBeNull();
    expect(
      mcpArgumentRules([{ serverId: 'filesystem', default: 'allow', tools: {} }], 'mcp.filesystem.read_file'),
    ).toBe(null);
  });
});

describe('agent.mcp_grant.replaced v1 → v2 (the grant carries its rules)', () => {
  const fixture = JSON.parse(
    fs.readFileSync(path.join(__dirname, '..', '..', 'fixtures', 'events', 'agent.mcp_grant.replaced.v1.json'), 'utf8'),
  ) as {
    event_type: 'agent.mcp_grant.replaced';
    payload_schema_version: number;
    payload: object;
    expected_current: object;
  };

  it('upcasts the frozen v1 fixture with empty rules on the grant and on the previous grant', () => {
    expect(EVENT_CATALOG['agent.mcp_grant.replaced'].currentVersion).toBe(2);
    const r = upcast(1, fixture.event_type, fixture.payload_schema_version, fixture.payload);
    expect(r).toEqual({ version: 2, payload: fixture.expected_current });
    const validate = new Ajv({ strict: false }).compile(EVENT_CATALOG['agent.mcp_grant.replaced'].schema);
    expect(validate(r.payload)).toBe(true);
  });

  it('a v1 payload with no previous grant upcasts to previous null', () => {
    const r = upcast(1, fixture.event_type, 1, { ...fixture.payload, previous: null });
    expect((r.payload as { previous: unknown }).previous).toBeNull();
  });
});
