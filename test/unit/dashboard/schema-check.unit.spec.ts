import Ajv from 'ajv';
import { argumentIssues } from '../../../src/dashboard/app/schema-check';
import { createDemoExternalWriteTool } from '../../../src/tools/demo/external-write';

/**
 * The console's edit-form check (ADR 0044) names the same fields the server's Ajv check refuses,
 * and accepts what Ajv accepts, on the demo write's schema.
 */
const schema = createDemoExternalWriteTool({
  record: () => Promise.resolve({ id: 1 }),
  count: () => Promise.resolve(0),
}).spec.inputSchema;
const ajv = new Ajv({ allErrors: true, strict: false }).compile(schema);

describe('the console edit form’s schema check', () => {
  it.each([
    [{ text: 'hello, world', target: 'the newsletter' }, []],
    [{ text: '', target: 'the newsletter' }, ['arguments.text']],
    [{ target: 'the newsletter' }, ['arguments.text']],
    [{ text: 42, target: 'the newsletter' }, ['arguments.text']],
    [{ text: 'hi', target: 'x', cc: 'everyone' }, ['arguments.cc']],
    [{ text: 'hi', target: 'x', simulated_ack_delay_ms: 1.5 }, ['arguments.simulated_ack_delay_ms']],
    [{ text: 'hi', target: 'x', simulated_ack_delay_ms: 20_000 }, ['arguments.simulated_ack_delay_ms']],
    [{ text: 'x'.repeat(4001), target: 'x' }, ['arguments.text']],
  ])('case %#: names the fields Ajv refuses, and accepts what it accepts', (args, fields) => {
    const issues = argumentIssues(args, schema);
    expect(issues.map((i) => i.field)).toEqual(fields);
    expect(ajv(args)).toBe(fields.length === 0);
  });

  it('checks arrays, enums and nested objects, and types a whole non-object', () => {
    const s = {
      type: 'object',
      properties: {
        mode: { enum: ['a', 'b'] },
        tags: { type: 'array', items: { type: 'string' }, maxItems: 2 },
        opts: { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] },
      },
    };
    const fields = argumentIssues({ mode: 'c', tags: ['x', 1, 'z'], opts: {} }, s).map((i) => i.field);
    expect(fields).toEqual(['arguments.mode', 'arguments.tags', 'arguments.tags.1', 'arguments.opts.n']);
    expect(argumentIssues('hello', s)).toEqual([{ field: 'arguments', message: 'must be object' }]);
  });
});
