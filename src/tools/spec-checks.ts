import { ConfigurationError } from '../domain/errors';
import { TOOL_NAME_PATTERN, type ToolSpec } from '../domain/tools/tool-spec';

/**
 * Startup checks of a ToolSpec that need no schema compiler. A bad spec is a deployment bug,
 * so it fails loudly at registration rather than at a model's first call.
 * @throws ConfigurationError
 */
export function assertValidSpec(spec: ToolSpec): void {
  const refuse = (reason: string): never => {
    throw new ConfigurationError(`tool '${spec.name}' cannot be registered: ${reason}`, { tool: spec.name });
  };
  if (!TOOL_NAME_PATTERN.test(spec.name)) {
    refuse(`name must be namespaced lower-case 'domain.verb' (${TOOL_NAME_PATTERN.source})`);
  }
  if (spec.inputSchema['type'] !== 'object') {
    refuse("inputSchema must have top-level type 'object' (tool arguments are a JSON object)");
  }
  if (spec.outputSchema !== null && spec.outputSchema['type'] !== 'object') {
    refuse("outputSchema must have top-level type 'object' (tool output is a JSON object)");
  }
  if (!Number.isFinite(spec.timeoutSeconds) || spec.timeoutSeconds <= 0) {
    refuse(`timeoutSeconds must be a positive number, got ${spec.timeoutSeconds}`);
  }
  if (!Number.isInteger(spec.maximumOutputBytes) || spec.maximumOutputBytes <= 0) {
    refuse(`maximumOutputBytes must be a positive integer, got ${spec.maximumOutputBytes}`);
  }
}

/**
 * The schema arguments are validated against: the tool's inputSchema with top-level
 * `additionalProperties: false` unless the schema states its own policy. A model inventing
 * an argument is refused rather than silently ignored. Only the top level is closed; nested
 * objects are the tool author's business.
 */
export function closedArgumentsSchema(inputSchema: Record<string, unknown>): Record<string, unknown> {
  if ('additionalProperties' in inputSchema || 'unevaluatedProperties' in inputSchema) return inputSchema;
  return { ...inputSchema, additionalProperties: false };
}
