import Ajv, { type ValidateFunction } from 'ajv';
import { ConfigurationError, ToolNotFoundError } from '../domain/errors';
import { parseMcpToolName } from '../domain/mcp-grants';
import type { ToolSpec } from '../domain/tools/tool-spec';
import type { Tool } from '../ports/tool';
import { compareCodeUnits } from './canonical-arguments';
import { toSchemaIssues, type SchemaCheck } from './schema-issues';
import { assertValidSpec, closedArgumentsSchema } from './spec-checks';

export { argumentsHash, normalizeArguments } from './canonical-arguments';
export type { SchemaCheck, SchemaIssue } from './schema-issues';

interface RegisteredTool {
  readonly tool: Tool;
  readonly validateInput: ValidateFunction;
  readonly validateOutput: ValidateFunction | null;
}

/**
 * The set of tools a process offers. Registration validates each spec and compiles its schemas
 * once (strict Ajv), so every configuration mistake surfaces at startup as a ConfigurationError.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();
  // strict: unknown keywords and ambiguous types in a tool schema are errors, not silent no-ops.
  private readonly ajv = new Ajv({ allErrors: true, strict: true, useDefaults: false });

  /**
   * Adds a tool. Refuses duplicate or malformed names, non-object or uncompilable schemas,
   * and non-positive timeout or output limits.
   * @throws ConfigurationError
   */
  register(tool: Tool): void {
    const { spec } = tool;
    if (this.tools.has(spec.name)) {
      throw new ConfigurationError(`tool '${spec.name}' is registered twice`, { tool: spec.name });
    }
    assertValidSpec(spec);
    const argumentsSchema = closedArgumentsSchema(spec.inputSchema);
    const validateInput = this.compile(spec.name, 'inputSchema', argumentsSchema);
    let validateOutput: ValidateFunction | null;
    try {
      validateOutput = spec.outputSchema === null ? null : this.compile(spec.name, 'outputSchema', spec.outputSchema);
    } catch (error) {
      // Forget the input schema too, so a refused tool leaves no trace (e.g. a claimed $id).
      this.ajv.removeSchema(argumentsSchema);
      throw error;
    }
    this.tools.set(spec.name, { tool, validateInput, validateOutput });
  }

  /** Removes a tool (MCP re-discovery replaces a server's tools); a no-op for an unknown name. */
  unregister(name: string): void {
    this.tools.delete(name);
  }

  /** The tool registered under `name`, or undefined. */
  get(name: string): Tool | undefined {
    return this.tools.get(name)?.tool;
  }

  /** All registered tools, sorted by name. */
  list(): Tool[] {
    return [...this.tools.values()]
      .map((entry) => entry.tool)
      .sort((a, b) => compareCodeUnits(a.spec.name, b.spec.name));
  }

  /**
   * The specs a model may see, sorted by name in code-unit order so the prompt prefix built from
   * them is byte-stable across processes and locales. Enabled names that are not registered are
   * skipped (agent configuration is validated against `get` where it is loaded); duplicates collapse.
   *
   * Scopes (ADR 0032): an MCP tool (`mcp.<server>.<tool>`) whose required scopes the run's set does
   * not all hold is hidden — its description is a third-party server's text, and an operator who
   * scoped it meant the principal not to see it. A builtin tool is offered whatever the set: its
   * definition is ours, and a call of it is denied `missing_scope` (naming the scope) before it
   * runs, so the model can tell the user why it could not act. Every call is authorized either way.
   */
  definitionsFor(enabledToolNames: readonly string[], principalScopes: ReadonlySet<string>): ToolSpec[] {
    const specs = new Map<string, ToolSpec>();
    for (const name of enabledToolNames) {
      const spec = this.tools.get(name)?.tool.spec;
      if (spec === undefined) continue;
      const inScope = spec.requiredScopes.every((scope) => principalScopes.has(scope));
      if (inScope || parseMcpToolName(name) === null) specs.set(name, spec);
    }
    return [...specs.values()].sort((a, b) => compareCodeUnits(a.name, b.name));
  }

  /**
   * Validates model-supplied arguments against the tool's inputSchema (top level closed to
   * unknown properties unless the schema says otherwise). Never coerces or fills defaults.
   * @throws ToolNotFoundError when no tool has this name.
   */
  validateArguments(name: string, args: unknown): SchemaCheck<Record<string, unknown>> {
    const { validateInput } = this.entry(name);
    if (validateInput(args)) return { ok: true, value: args as Record<string, unknown> };
    return { ok: false, errors: toSchemaIssues(validateInput.errors) };
  }

  /**
   * Validates a tool's output against its outputSchema; always ok when the tool declares none.
   * @throws ToolNotFoundError when no tool has this name.
   */
  validateResult(name: string, output: unknown): SchemaCheck<Record<string, unknown>> {
    const { validateOutput } = this.entry(name);
    if (validateOutput === null || validateOutput(output)) {
      return { ok: true, value: output as Record<string, unknown> };
    }
    return { ok: false, errors: toSchemaIssues(validateOutput.errors) };
  }

  private entry(name: string): RegisteredTool {
    const entry = this.tools.get(name);
    if (entry === undefined) throw new ToolNotFoundError(`no tool named '${name}'`, { tool: name });
    return entry;
  }

  private compile(toolName: string, which: string, schema: Record<string, unknown>): ValidateFunction {
    try {
      return this.ajv.compile(schema);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new ConfigurationError(
        `tool '${toolName}' cannot be registered: invalid ${which}: ${reason}`,
        { tool: toolName },
        { cause: error },
      );
    }
  }
}
