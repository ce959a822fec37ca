import type { ModelToolDefinition } from '../../../domain/model/model-events';

/**
 * Tool names as providers accept them. Our tools are namespaced with dots (`math.calculate`), but
 * OpenAI and Anthropic function names must match `^[a-zA-Z0-9_-]{1,64}$`. Each request gets a
 * codec built from its tool list, so a name the model returns maps back to exactly one tool; an
 * unknown name comes back unchanged (the tool pipeline reports it as an unknown tool).
 */
export class ToolNameCodec {
  private readonly toWire = new Map<string, string>();
  private readonly fromWire = new Map<string, string>();

  constructor(tools: readonly Pick<ModelToolDefinition, 'name'>[]) {
    for (const t of tools) this.add(t.name);
  }

  encode(name: string): string {
    return this.toWire.get(name) ?? this.add(name);
  }

  decode(wire: string): string {
    return this.fromWire.get(wire) ?? wire;
  }

  private add(name: string): string {
    const base = name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 60) || 'tool';
    let wire = base;
    for (let i = 2; this.fromWire.has(wire) && this.fromWire.get(wire) !== name; i++) wire = `${base}_${i}`;
    this.toWire.set(name, wire);
    this.fromWire.set(wire, name);
    return wire;
  }
}
