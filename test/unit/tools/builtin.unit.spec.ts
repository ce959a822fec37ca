import { createBuiltinTools } from '../../../src/tools/builtin';
import { ToolRegistry } from '../../../src/tools/registry';

describe('createBuiltinTools', () => {
  it('returns the calculator and the clock', () => {
    expect(createBuiltinTools().map((tool) => tool.spec.name)).toEqual(['math.calculate', 'system.current_time']);
  });

  it('passes every registration check of the strict registry', () => {
    const registry = new ToolRegistry();
    for (const tool of createBuiltinTools()) registry.register(tool);
    expect(registry.definitionsFor(['system.current_time', 'math.calculate'], new Set())).toHaveLength(2);
  });

  it('produces outputs that satisfy their own outputSchemas', async () => {
    const registry = new ToolRegistry();
    const [calculator, clock] = createBuiltinTools();
    registry.register(calculator);
    registry.register(clock);
    const context = {
      runId: 'r',
      sessionId: 's',
      tenantId: 't',
      principalId: 'p',
      invocationId: 'i',
      idempotencyKey: 'k',
      clock: { nowMs: () => 0, nowIso: () => '1970-01-01T00:00:00.000Z', sleep: () => Promise.resolve() },
      signal: new AbortController().signal,
    };
    const calculated = await calculator.execute({ expression: '2+2' }, context);
    const told = await clock.execute({ timezone: 'Asia/Tokyo' }, context);
    if (!calculated.ok || !told.ok) throw new Error('builtin tools failed');
    expect(registry.validateResult('math.calculate', calculated.output).ok).toBe(true);
    expect(registry.validateResult('system.current_time', told.output).ok).toBe(true);
  });

  it('accepts the arguments its descriptions advertise and rejects invented ones', () => {
    const registry = new ToolRegistry();
    for (const tool of createBuiltinTools()) registry.register(tool);
    expect(registry.validateArguments('math.calculate', { expression: '1+1' }).ok).toBe(true);
    expect(registry.validateArguments('math.calculate', { expression: '' }).ok).toBe(false);
    expect(registry.validateArguments('math.calculate', { expression: 'x'.repeat(1001) }).ok).toBe(false);
    expect(registry.validateArguments('system.current_time', {}).ok).toBe(true);
    expect(registry.validateArguments('system.current_time', { tz: 'UTC' }).ok).toBe(false);
  });
});
