import { ConfigurationError, ToolNotFoundError } from '../../../src/domain/errors';
import type { ToolSpec } from '../../../src/domain/tools/tool-spec';
import type { Tool } from '../../../src/ports/tool';
import { ToolRegistry } from '../../../src/tools/registry';

function fakeTool(overrides: Partial<ToolSpec> = {}): Tool {
  const spec: ToolSpec = {
    name: 'test.echo',
    version: '1.0.0',
    description: 'Echoes its text.',
    inputSchema: {
      type: 'object',
      properties: { text: { type: 'string' }, times: { type: 'integer', minimum: 1 } },
      required: ['text'],
    },
    outputSchema: {
      type: 'object',
      properties: { echoed: { type: 'string' } },
      required: ['echoed'],
      additionalProperties: false,
    },
    sideEffect: 'none',
    risk: 'low',
    idempotency: 'read_only',
    requiredScopes: [],
    timeoutSeconds: 5,
    maximumOutputBytes: 1024,
    allowParallel: true,
    ...overrides,
  };
  return { spec, execute: () => Promise.resolve({ ok: true, output: {} }) };
}

function registryWith(...tools: Tool[]): ToolRegistry {
  const registry = new ToolRegistry();
  for (const tool of tools) registry.register(tool);
  return registry;
}

describe('ToolRegistry registration', () => {
  it('finds a registered tool by name and lists tools sorted by name', () => {
    const registry = registryWith(fakeTool({ name: 'zeta.run' }), fakeTool({ name: 'alpha.run' }));
    expect(registry.get('zeta.run')?.spec.name).toBe('zeta.run');
    expect(registry.get('missing.tool')).toBeUndefined();
    expect(registry.list().map((tool) => tool.spec.name)).toEqual(['alpha.run', 'zeta.run']);
  });

  it('refuses a second tool with the same name', () => {
    const registry = registryWith(fakeTool());
    expect(() => registry.register(fakeTool())).toThrow(ConfigurationError);
    expect(() => registry.register(fakeTool())).toThrow(/registered twice/);
  });

  it.each(['echo', 'Test.echo', 'test.', 'test..echo', 'test.echo-it', '1test.echo'])(
    'refuses the malformed name %p',
    (name) => {
      expect(() => registryWith(fakeTool({ name }))).toThrow(ConfigurationError);
    },
  );

  it('refuses an inputSchema Ajv cannot compile', () => {
    const inputSchema = { type: 'object', properties: { text: { type: 'strnig' } } };
    expect(() => registryWith(fakeTool({ inputSchema }))).toThrow(/invalid inputSchema/);
  });

  it('refuses an inputSchema with an unknown keyword, because Ajv runs in strict mode', () => {
    const inputSchema = { type: 'object', properties: { text: { type: 'string', maxLenght: 3 } } };
    expect(() => registryWith(fakeTool({ inputSchema }))).toThrow(ConfigurationError);
  });

  it('refuses an inputSchema whose top level is not an object', () => {
    expect(() => registryWith(fakeTool({ inputSchema: { type: 'string' } }))).toThrow(/top-level type 'object'/);
    expect(() => registryWith(fakeTool({ inputSchema: { properties: {} } }))).toThrow(ConfigurationError);
  });

  it('refuses an outputSchema Ajv cannot compile', () => {
    const outputSchema = { type: 'object', required: 'echoed' };
    expect(() => registryWith(fakeTool({ outputSchema }))).toThrow(/invalid outputSchema/);
  });

  it.each([0, -1, Number.NaN])('refuses timeoutSeconds of %p', (timeoutSeconds) => {
    expect(() => registryWith(fakeTool({ timeoutSeconds }))).toThrow(/timeoutSeconds/);
  });

  it.each([0, -10, 1.5])('refuses maximumOutputBytes of %p', (maximumOutputBytes) => {
    expect(() => registryWith(fakeTool({ maximumOutputBytes }))).toThrow(/maximumOutputBytes/);
  });

  it('leaves the registry unchanged when a registration is refused', () => {
    const registry = new ToolRegistry();
    expect(() => registry.register(fakeTool({ timeoutSeconds: 0 }))).toThrow(ConfigurationError);
    expect(registry.get('test.echo')).toBeUndefined();
    expect(() => registry.register(fakeTool())).not.toThrow();
  });
  it('forgets the input schema of a tool refused for its output schema, so the fixed tool registers', () => {
    const registry = new ToolRegistry();
    const inputSchema = { $id: 'urn:test:echo-input', type: 'object', properties: { text: { type: 'string' } } };
    expect(() => registry.register(fakeTool({ inputSchema, outputSchema: { type: 'object', required: 'x' } }))).toThrow(
      ConfigurationError,
    );
    expect(() => registry.register(fakeTool({ inputSchema }))).not.toThrow();
  });
});

describe('ToolRegistry.validateArguments', () => {
  const registry = registryWith(fakeTool());

  it('accepts valid arguments and returns them unchanged', () => {
    expect(registry.validateArguments('test.echo', { text: 'hi', times: 2 })).toEqual({
      ok: true,
      value: { text: 'hi', times: 2 },
    });
  });

  it('reports a missing required property at its own path', () => {
    expect(registry.validateArguments('test.echo', {})).toEqual({
      ok: false,
      errors: [{ path: '/text', message: 'is required' }],
    });
  });

  it('reports a wrong type without coercing it', () => {
    const result = registry.validateArguments('test.echo', { text: 'hi', times: '2' });
    expect(result).toEqual({ ok: false, errors: [{ path: '/times', message: 'must be integer' }] });
  });

  it('rejects an unknown property when the schema does not mention additionalProperties', () => {
    expect(registry.validateArguments('test.echo', { text: 'hi', colour: 'red' })).toEqual({
      ok: false,
      errors: [{ path: '/colour', message: 'is not an allowed property' }],
    });
  });

  it('allows extra properties when the schema explicitly permits them', () => {
    const open = registryWith(
      fakeTool({
        inputSchema: { type: 'object', properties: { text: { type: 'string' } }, additionalProperties: true },
      }),
    );
    expect(open.validateArguments('test.echo', { text: 'hi', colour: 'red' }).ok).toBe(true);
  });

  it('reports every problem at once', () => {
    const result = registry.validateArguments('test.echo', { times: 0, colour: 'red' });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.map((error) => error.path).sort()).toEqual(['/colour', '/text', '/times']);
  });

  it('rejects arguments that are not an object', () => {
    expect(registry.validateArguments('test.echo', ['hi']).ok).toBe(false);
    expect(registry.validateArguments('test.echo', null).ok).toBe(false);
  });

  it('throws ToolNotFoundError for an unknown tool', () => {
    expect(() => registry.validateArguments('missing.tool', {})).toThrow(ToolNotFoundError);
  });
});

describe('ToolRegistry.validateResult', () => {
  it('checks output against the outputSchema', () => {
    const registry = registryWith(fakeTool());
    expect(registry.validateResult('test.echo', { echoed: 'hi' })).toEqual({ ok: true, value: { echoed: 'hi' } });
    expect(registry.validateResult('test.echo', { echoed: 1 })).toEqual({
      ok: false,
      errors: [{ path: '/echoed', message: 'must be string' }],
    });
  });

  it('accepts any output when the tool declares no outputSchema', () => {
    const registry = registryWith(fakeTool({ outputSchema: null }));
    expect(registry.validateResult('test.echo', { anything: true }).ok).toBe(true);
  });
});

describe('ToolRegistry.definitionsFor', () => {
  const registry = registryWith(
    fakeTool({ name: 'web.fetch', requiredScopes: ['net'] }),
    fakeTool({ name: 'math.calculate' }),
    fakeTool({ name: 'files.write', requiredScopes: ['files:read', 'files:write'] }),
    fakeTool({ name: 'b_tools.x' }),
    fakeTool({ name: 'a_tools.x' }),
    fakeTool({ name: 'mcp.files.write', requiredScopes: ['files:write'] }),
    fakeTool({ name: 'mcp.files.read', requiredScopes: ['files:read'] }),
  );

  it('returns only tools enabled for the agent, sorted by name', () => {
    const names = registry.definitionsFor(['web.fetch', 'math.calculate'], new Set(['net'])).map((spec) => spec.name);
    expect(names).toEqual(['math.calculate', 'web.fetch']);
  });

  it('hides an MCP tool whose required scopes the run does not all hold', () => {
    const scopes = new Set(['files:read']);
    const names = registry
      .definitionsFor(['mcp.files.write', 'mcp.files.read', 'math.calculate'], scopes)
      .map((s) => s.name);
    expect(names).toEqual(['math.calculate', 'mcp.files.read']);
  });

  it('still offers a builtin tool out of scope (its call is denied missing_scope, so the model can say why)', () => {
    const scopes = new Set(['files:read']);
    const names = registry.definitionsFor(['files.write', 'web.fetch', 'math.calculate'], scopes).map((s) => s.name);
    expect(names).toEqual(['files.write', 'math.calculate', 'web.fetch']);
  });

  it('includes a tool when the principal holds every required scope', () => {
    const scopes = new Set(['files:read', 'files:write']);
    expect(registry.definitionsFor(['files.write'], scopes).map((spec) => spec.name)).toEqual(['files.write']);
  });

  it('skips enabled names that are not registered and collapses duplicates', () => {
    const names = registry.definitionsFor(['nope.tool', 'math.calculate', 'math.calculate'], new Set());
    expect(names.map((spec) => spec.name)).toEqual(['math.calculate']);
  });

  it('orders names by code unit whatever order the agent lists them in', () => {
    const forward = registry.definitionsFor(['a_tools.x', 'b_tools.x', 'math.calculate'], new Set());
    const backward = registry.definitionsFor(['math.calculate', 'b_tools.x', 'a_tools.x'], new Set());
    expect(backward).toEqual(forward);
    expect(forward.map((spec) => spec.name)).toEqual(['a_tools.x', 'b_tools.x', 'math.calculate']);
  });
});
