import type { ToolResultTrust } from '../../domain/events/payloads';
import type { IdempotencyClass, RiskLevel, SideEffectClass, ToolResult, ToolSpec } from '../../domain/tools/tool-spec';
import type { Tool, ToolExecutionContext } from '../../ports/tool';
import { UNCLASSIFIED, type McpClassification, type McpServerConfig } from './mcp-config';
import { redactCredentials } from './redact';
import {
  McpInputRequired,
  McpProtocolFault,
  McpServerUnavailable,
  type DiscoveredTool,
  type McpServerSupervisor,
} from './supervisor';

const SIDE_EFFECT_ORDER: readonly SideEffectClass[] = ['none', 'read', 'workspace_write', 'external_write', 'control'];
const RISK_ORDER: readonly RiskLevel[] = ['low', 'medium', 'high', 'critical'];
const IDEMPOTENCY_ORDER: readonly IdempotencyClass[] = ['read_only', 'idempotent', 'conditional', 'non_idempotent'];

const stricter = <T>(order: readonly T[], a: T, b: T): T => (order.indexOf(a) >= order.indexOf(b) ? a : b);

/** `mcp.<server>.<tool>` with the tool part lower-cased and reduced to `[a-z0-9_]`, starting with a letter. */
export function mcpToolName(serverId: string, toolName: string): string {
  let t = toolName.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  if (!/^[a-z]/.test(t)) t = `t_${t}`;
  return `mcp.${serverId}.${t}`;
}

/**
 * The operator's classification (per tool, else per server, else UNCLASSIFIED = external write),
 * made stricter — never looser — by the server's own annotations: `destructiveHint: true` makes
 * it at least a high-risk, non-idempotent external write; `readOnlyHint: false` on a tool the
 * operator called read-only makes it an external write. `readOnlyHint: true` changes nothing.
 */
export function classify(server: McpServerConfig, tool: DiscoveredTool): McpClassification {
  const base = server.tools[tool.name] ?? server.classification ?? UNCLASSIFIED;
  let { sideEffect, risk, idempotency } = base;
  if (tool.annotations.destructiveHint === true) {
    sideEffect = stricter(SIDE_EFFECT_ORDER, sideEffect, 'external_write');
    risk = stricter(RISK_ORDER, risk, 'high');
    idempotency = stricter(IDEMPOTENCY_ORDER, idempotency, 'non_idempotent');
  }
  if (tool.annotations.readOnlyHint === false && (sideEffect === 'none' || sideEffect === 'read')) {
    sideEffect = 'external_write';
    idempotency = stricter(IDEMPOTENCY_ORDER, idempotency, 'conditional');
  }
  return { sideEffect, risk, idempotency, requiredScopes: base.requiredScopes };
}

/** Drops `$schema` (Ajv knows draft-07 only) so a plain draft-07/2020-12 object schema still compiles. */
function inputSchemaOf(tool: DiscoveredTool): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = tool.inputSchema;
  return rest;
}

/** An MCP tool behind the Tool port. Its results are always EXTERNAL_UNTRUSTED (plan §11.2). */
export class McpTool implements Tool {
  readonly spec: ToolSpec;
  /** Read by the tool pipeline (ToolExtensions.trust). */
  readonly trust: ToolResultTrust = 'external_untrusted';

  constructor(
    private readonly supervisor: McpServerSupervisor,
    readonly mcpName: string,
    spec: ToolSpec,
  ) {
    this.spec = spec;
  }

  async execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolResult> {
    return recorded(this.supervisor, await this.call(args, ctx));
  }

  private async call(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolResult> {
    const serverId = this.supervisor.config.id;
    try {
      const raw = await this.supervisor.callTool(
        this.mcpName,
        args,
        ctx.signal,
        this.spec.timeoutSeconds * 1000,
        ctx.progress, // → transient tool.call.progress frames on the run's stream (ADR 0048)
      );
      // A credential we handed the server (env allowlist, HTTP auth) never comes back out of it.
      const out = redactCredentials(raw, this.supervisor.config);
      // Whole up to the ceiling: the pipeline keeps a result over max_output_bytes as an artifact
      // and gives the model an excerpt and its reference (plan §8.3 "truncate or artifactize").
      const output = limitOutput(
        {
          server: serverId,
          tool: this.mcpName,
          content: out.content,
          ...(out.structuredContent ? { structured: out.structuredContent } : {}),
        },
        MCP_RESULT_CEILING_BYTES,
      );
      if (out.isError) {
        return {
          ok: false,
          errorCode: 'mcp_tool_error',
          message: `${this.spec.name}: ${textOf(out.content)}`,
          retryable: false,
        };
      }
      return { ok: true, output };
    } catch (caught) {
      const e = redactCredentials(
        caught instanceof Error
          ? { message: caught.message, code: (caught as { code?: unknown }).code, original: caught }
          : caught,
        this.supervisor.config,
      );
      if (caught instanceof McpProtocolFault)
        return {
          ok: false,
          errorCode: 'mcp_protocol_error',
          message: `${this.spec.name}: ${(e as { message: string }).message.slice(0, 500)} (server_id=${serverId})`,
          retryable: false,
        };
      if (caught instanceof McpInputRequired)
        return {
          ok: false,
          errorCode: 'mcp_input_required',
          message: `${(e as { message: string }).message} (server_id=${serverId})`,
          retryable: false,
        };
      if (caught instanceof McpServerUnavailable)
        return {
          ok: false,
          errorCode: 'mcp_server_unavailable',
          message: `${(e as { message: string }).message} (server_id=${serverId})`,
          retryable: true,
        };
      const err = e as { code?: unknown; message?: string };
      const message = String(err.message ?? caught);
      if (err.code === -32001 || /timed out/i.test(message))
        return {
          ok: false,
          errorCode: 'mcp_timeout',
          message: `${this.spec.name} timed out (server_id=${serverId})`,
          retryable: true,
        };
      if (err.code === -32000 || /connection closed/i.test(message))
        return {
          ok: false,
          errorCode: 'mcp_server_unavailable',
          message: `MCP server ${serverId} is unavailable: connection closed during the call (server_id=${serverId})`,
          retryable: true,
        };
      return {
        ok: false,
        errorCode: 'mcp_protocol_error',
        message: `${this.spec.name}: ${message.slice(0, 500)}`,
        retryable: false,
      };
    }
  }
}

/** mcp_calls_total{server,status}: `ok`, or the call's MCP error code. */
function recorded(supervisor: McpServerSupervisor, result: ToolResult): ToolResult {
  supervisor.metrics.mcpCall(supervisor.config.id, result.ok ? 'ok' : result.errorCode);
  return result;
}

function textOf(content: unknown[]): string {
  const text = content
    .map((c) =>
      c && typeof c === 'object' && (c as { type?: unknown }).type === 'text'
        ? String((c as { text?: unknown }).text)
        : '',
    )
    .join(' ')
    .trim();
  return (text || 'the tool reported an error').slice(0, 500);
}

/**
 * The most of one MCP result kept anywhere (16 MiB, the largest `max_output_bytes` allowed): below
 * it a result reaches the tool pipeline whole, which stores one over the tool's `max_output_bytes`
 * as an artifact; above it even the artifact would be unreasonable, so the result is cut here (the
 * JSON-RPC message was already in memory: the ceiling bounds what is stored, not what was read).
 */
export const MCP_RESULT_CEILING_BYTES = 16 * 1024 * 1024;

/** Keeps the result under `limit` serialized bytes: oversize content becomes a text excerpt. */
export function limitOutput(output: Record<string, unknown>, limit: number): Record<string, unknown> {
  const json = JSON.stringify(output);
  if (Buffer.byteLength(json, 'utf8') <= limit) return output;
  const excerpt = Buffer.from(json, 'utf8')
    .subarray(0, Math.max(0, limit - 256))
    .toString('utf8');
  return {
    server: output.server,
    tool: output.tool,
    truncated: true,
    original_bytes: Buffer.byteLength(json),
    excerpt,
  };
}

/** What reading a resource is, unless the operator classifies `read_resource` otherwise: a read. */
const RESOURCE_READ: McpClassification = {
  sideEffect: 'read',
  risk: 'low',
  idempotency: 'read_only',
  requiredScopes: [],
};

/**
 * `mcp.<server>.read_resource`: reads one resource of the server by URI (plan Milestone 8 "resource
 * retrieval"). Same pipeline, grants and untrusted labelling as the server's tools.
 */
export class McpResourceTool implements Tool {
  readonly spec: ToolSpec;
  readonly trust: ToolResultTrust = 'external_untrusted';

  constructor(private readonly supervisor: McpServerSupervisor) {
    const server = supervisor.config;
    const c = server.tools.read_resource ?? RESOURCE_READ;
    this.spec = {
      name: `mcp.${server.id}.read_resource`,
      version: '1',
      description: `Read one resource of MCP server ${server.id} by its URI. The contents are external, untrusted data.`,
      inputSchema: {
        type: 'object',
        properties: { uri: { type: 'string', minLength: 1, maxLength: 2048 } },
        required: ['uri'],
        additionalProperties: false,
      },
      outputSchema: null,
      sideEffect: c.sideEffect,
      risk: c.risk,
      idempotency: c.idempotency,
      requiredScopes: [...c.requiredScopes],
      timeoutSeconds: server.callTimeoutSeconds,
      maximumOutputBytes: server.maxOutputBytes,
      allowParallel: false,
    };
  }

  async execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolResult> {
    return recorded(this.supervisor, await this.read(args, ctx));
  }

  private async read(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolResult> {
    const server = this.supervisor.config;
    const uri = String(args.uri);
    try {
      const contents = redactCredentials(
        await this.supervisor.readResource(uri, ctx.signal, this.spec.timeoutSeconds * 1000),
        server,
      );
      return { ok: true, output: limitOutput({ server: server.id, uri, contents }, MCP_RESULT_CEILING_BYTES) };
    } catch (caught) {
      return resourceFailure(this.spec.name, server, caught);
    }
  }
}

/** A failed resource read or subscription as a structured tool failure. */
function resourceFailure(toolName: string, server: McpServerConfig, caught: unknown): ToolResult {
  if (caught instanceof McpServerUnavailable)
    return {
      ok: false,
      errorCode: 'mcp_server_unavailable',
      message: `${caught.message} (server_id=${server.id})`,
      retryable: true,
    };
  const message = redactCredentials(String((caught as Error).message ?? caught), server).slice(0, 500);
  const code = (caught as { code?: unknown }).code;
  if (code === -32001 || /timed out/i.test(message))
    return {
      ok: false,
      errorCode: 'mcp_timeout',
      message: `${toolName} timed out (server_id=${server.id})`,
      retryable: true,
    };
  return {
    ok: false,
    errorCode: 'mcp_resource_error',
    message: `${toolName}: ${message} (server_id=${server.id})`,
    retryable: false,
  };
}

/** The longest `mcp.<server>.watch_resource` wait a call may ask for. */
export const WATCH_RESOURCE_MAX_SECONDS = 120;

/**
 * `mcp.<server>.watch_resource` (offered when the server advertises `resources.subscribe`, ADR
 * 0051): subscribes to one resource, waits up to `timeout_seconds` for the server's
 * `notifications/resources/updated` for it — each shown live on the run's stream as a transient
 * `tool.call.progress` frame — and answers the resource's new contents, or `updated: false` at the
 * timeout. The subscription lives as long as the call and is always released.
 */
export class McpWatchResourceTool implements Tool {
  readonly spec: ToolSpec;
  readonly trust: ToolResultTrust = 'external_untrusted';

  constructor(private readonly supervisor: McpServerSupervisor) {
    const server = supervisor.config;
    const c = server.tools.watch_resource ?? RESOURCE_READ;
    this.spec = {
      name: `mcp.${server.id}.watch_resource`,
      version: '1',
      description: `Wait until MCP server ${server.id} reports that the resource at a URI changed (at most timeout_seconds), then read it. The contents are external, untrusted data.`,
      inputSchema: {
        type: 'object',
        properties: {
          uri: { type: 'string', minLength: 1, maxLength: 2048 },
          timeout_seconds: { type: 'integer', minimum: 1, maximum: WATCH_RESOURCE_MAX_SECONDS },
        },
        required: ['uri'],
        additionalProperties: false,
      },
      outputSchema: null,
      sideEffect: c.sideEffect,
      risk: c.risk,
      idempotency: c.idempotency,
      requiredScopes: [...c.requiredScopes],
      timeoutSeconds: WATCH_RESOURCE_MAX_SECONDS + server.callTimeoutSeconds,
      maximumOutputBytes: server.maxOutputBytes,
      allowParallel: false,
    };
  }

  async execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolResult> {
    return recorded(this.supervisor, await this.watch(args, ctx));
  }

  private async watch(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolResult> {
    const server = this.supervisor.config;
    const uri = String(args.uri);
    const waitMs = (typeof args.timeout_seconds === 'number' ? args.timeout_seconds : 30) * 1000;
    const callMs = server.callTimeoutSeconds * 1000;
    let updates = 0;
    let signalled!: () => void;
    const updated = new Promise<'updated'>((resolve) => (signalled = () => resolve('updated')));
    let timer: NodeJS.Timeout | undefined;
    let release: (() => Promise<void>) | null = null;
    try {
      release = await this.supervisor.subscribeResource(
        uri,
        () => {
          updates++;
          ctx.progress?.({ progress: updates, total: null, message: `resource updated: ${uri}` });
          signalled();
        },
        callMs,
      );
      const waited = await Promise.race([
        updated,
        new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), waitMs))),
        new Promise<'aborted'>((resolve) => ctx.signal.addEventListener('abort', () => resolve('aborted'))),
      ]);
      if (waited !== 'updated') return { ok: true, output: { server: server.id, uri, updated: false } };
      const contents = redactCredentials(await this.supervisor.readResource(uri, ctx.signal, callMs), server);
      return {
        ok: true,
        output: limitOutput({ server: server.id, uri, updated: true, contents }, MCP_RESULT_CEILING_BYTES),
      };
    } catch (caught) {
      return resourceFailure(this.spec.name, server, caught);
    } finally {
      clearTimeout(timer);
      await release?.().catch(() => undefined);
    }
  }
}

export interface MappedTools {
  readonly tools: (McpTool | McpResourceTool | McpWatchResourceTool)[];
  /** Tools not offered, with the reason (logged by the caller). */
  readonly disabled: { readonly name: string; readonly reason: string }[];
}

/** Maps a server's discovered tools to specs; name collisions after sanitizing disable the later tool. */
export function mapTools(
  supervisor: McpServerSupervisor,
  discovered: readonly DiscoveredTool[],
  withResources = false,
  withSubscriptions = false,
): MappedTools {
  const server = supervisor.config;
  const tools: (McpTool | McpResourceTool | McpWatchResourceTool)[] = [];
  const disabled: { name: string; reason: string }[] = [];
  const taken = new Set<string>();
  const instructions = supervisor.instructions;
  const serverNotes = instructions ? { serverNotes: { source: `mcp.${server.id}`, text: instructions } } : {};
  for (const d of discovered) {
    const name = mcpToolName(server.id, d.name);
    if (taken.has(name)) {
      disabled.push({
        name: d.name,
        reason: `sanitized name ${name} collides with another tool of server ${server.id}`,
      });
      continue;
    }
    const schema = inputSchemaOf(d);
    if (schema.type !== 'object') {
      disabled.push({ name: d.name, reason: 'input schema is not an object schema' });
      continue;
    }
    taken.add(name);
    const c = classify(server, d);
    tools.push(
      new McpTool(supervisor, d.name, {
        name,
        version: '1',
        description: (d.description || `MCP tool ${d.name} of server ${server.id}`).slice(0, 1000),
        inputSchema: schema,
        outputSchema: null,
        sideEffect: c.sideEffect,
        risk: c.risk,
        idempotency: c.idempotency,
        requiredScopes: [...c.requiredScopes],
        timeoutSeconds: server.callTimeoutSeconds,
        maximumOutputBytes: server.maxOutputBytes,
        allowParallel: false,
        ...serverNotes,
      }),
    );
  }
  const builtins = [
    ...(withResources ? [new McpResourceTool(supervisor)] : []),
    ...(withResources && withSubscriptions ? [new McpWatchResourceTool(supervisor)] : []),
  ];
  for (const builtin of builtins) {
    const own = builtin.spec.name.split('.').at(-1)!;
    if (taken.has(builtin.spec.name))
      disabled.push({
        name: builtin.spec.name,
        reason: `the server has its own tool named ${own}; the resource ${own === 'read_resource' ? 'reader' : 'watcher'} is not offered`,
      });
    else tools.push(builtin);
  }
  return { tools, disabled };
}
