import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv from 'ajv';
import { parse } from 'yaml';
import { ConfigurationError } from '../domain/errors';
import type { SideEffectClass, ToolSpec } from '../domain/tools/tool-spec';
import { matchHardline } from './hardline';

export type PolicyDecisionType = 'allow' | 'deny' | 'require_approval' | 'allow_with_modifications';

/** Plan §9.1. `policyVersion` is stamped on every decision. */
export interface PolicyDecision {
  readonly decision: PolicyDecisionType;
  readonly reasonCode: string;
  readonly explanation: string;
  readonly modifiedArguments: Record<string, unknown> | null;
  readonly policyVersion: string;
}

/** What a decision may look at: the tool's declared classification and the normalized arguments. Never prompts or model text. */
export interface PolicyInput {
  readonly spec: ToolSpec;
  readonly arguments: Record<string, unknown>;
}

interface Rule {
  readonly decision: PolicyDecisionType;
  readonly reasonCode: string;
  readonly clamp: Readonly<Record<string, number>>;
}

export interface PolicyDocument {
  readonly name: string;
  readonly version: number;
  readonly sideEffects: Readonly<Record<SideEffectClass, Rule>>;
  readonly tools: Readonly<Record<string, Rule>>;
  readonly approvals: {
    readonly ttlSeconds: number | null;
    readonly onExpiry: 'inform_model' | 'fail_run';
    /** How long before its expiry a pending approval's recipient is warned (issue 31); null: never. */
    readonly warnBeforeSeconds: number | null;
  };
  /** Long-term memory writes (ADR 0035): whether `sensitive` memories may be stored (default deny). */
  readonly memory: { readonly sensitive: 'allow' | 'deny' };
}

/** `approvals.warn_before_seconds` when the policy does not say: ten minutes. */
export const DEFAULT_WARN_BEFORE_SECONDS = 600;

/** Restrictiveness order: a per-tool rule may never be looser than its side-effect row. */
const STRICTNESS: Record<PolicyDecisionType, number> = {
  allow: 0,
  allow_with_modifications: 1,
  require_approval: 2,
  deny: 3,
};
const SIDE_EFFECTS: readonly SideEffectClass[] = ['none', 'read', 'workspace_write', 'external_write', 'control'];

const ruleSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['decision', 'reason_code'],
  properties: {
    decision: { enum: Object.keys(STRICTNESS) },
    reason_code: { type: 'string', pattern: '^[a-z][a-z0-9_]*$' },
    clamp: { type: 'object', additionalProperties: { type: 'integer', minimum: 0 } },
  },
};
const documentSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'version', 'side_effects', 'approvals'],
  properties: {
    name: { type: 'string', pattern: '^[a-z][a-z0-9_-]*$' },
    version: { type: 'integer', minimum: 1 },
    side_effects: {
      type: 'object',
      additionalProperties: false,
      required: [...SIDE_EFFECTS],
      properties: Object.fromEntries(SIDE_EFFECTS.map((s) => [s, ruleSchema])),
    },
    tools: { type: 'object', additionalProperties: ruleSchema },
    approvals: {
      type: 'object',
      additionalProperties: false,
      required: ['ttl_seconds', 'on_expiry'],
      properties: {
        ttl_seconds: { type: ['integer', 'null'], minimum: 1 },
        on_expiry: { enum: ['inform_model', 'fail_run'] },
        warn_before_seconds: { type: ['integer', 'null'], minimum: 1 },
      },
    },
    memory: {
      type: 'object',
      additionalProperties: false,
      properties: { sensitive: { enum: ['allow', 'deny'] } },
    },
  },
};

interface RuleYaml {
  decision: PolicyDecisionType;
  reason_code: string;
  clamp?: Record<string, number>;
}
interface DocumentYaml {
  name: string;
  version: number;
  side_effects: Record<SideEffectClass, RuleYaml>;
  tools?: Record<string, RuleYaml>;
  approvals: {
    ttl_seconds: number | null;
    on_expiry: 'inform_model' | 'fail_run';
    warn_before_seconds?: number | null;
  };
  memory?: { sensitive?: 'allow' | 'deny' };
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object') {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

/**
 * The deterministic, versioned policy engine (plan §9, ADR-0012): hardline rules first, then the
 * per-tool rule, then the side-effect matrix. A pure function of (tool classification, normalized
 * arguments, policy document): no prompt, model output or tool result can influence it.
 */
export class PolicyEngine {
  readonly version: string;

  private constructor(
    readonly document: PolicyDocument,
    contentHash: string,
  ) {
    this.version = `${document.name}@${document.version}#${contentHash.slice(0, 12)}`;
  }

  /** Parses and validates a policy YAML text; refuses unknown keys and per-tool rules looser than their row. */
  static fromYaml(text: string, source = 'policy'): PolicyEngine {
    let raw: unknown;
    try {
      raw = parse(text);
    } catch (e) {
      throw new ConfigurationError(`${source}: not valid YAML: ${(e as Error).message}`, { source });
    }
    const validate = new Ajv({ allErrors: true }).compile(documentSchema);
    if (!validate(raw)) {
      const e = validate.errors?.[0];
      throw new ConfigurationError(`${source}: ${e?.instancePath || '(root)'} ${e?.message ?? 'is invalid'}`, {
        source,
      });
    }
    const y = raw as unknown as DocumentYaml;
    const rule = (r: RuleYaml): Rule => ({ decision: r.decision, reasonCode: r.reason_code, clamp: r.clamp ?? {} });
    const doc: PolicyDocument = {
      name: y.name,
      version: y.version,
      sideEffects: Object.fromEntries(SIDE_EFFECTS.map((s) => [s, rule(y.side_effects[s])])) as Record<
        SideEffectClass,
        Rule
      >,
      tools: Object.fromEntries(Object.entries(y.tools ?? {}).map(([k, r]) => [k, rule(r)])),
      approvals: {
        ttlSeconds: y.approvals.ttl_seconds,
        onExpiry: y.approvals.on_expiry,
        warnBeforeSeconds:
          y.approvals.warn_before_seconds === undefined ? DEFAULT_WARN_BEFORE_SECONDS : y.approvals.warn_before_seconds,
      },
      memory: { sensitive: y.memory?.sensitive ?? 'deny' },
    };
    return new PolicyEngine(deepFreeze(doc), createHash('sha256').update(text).digest('hex'));
  }

  /** Loads `<dir>/<name>.yaml`. */
  static load(dir: string, name = 'default'): PolicyEngine {
    const file = path.join(dir, `${name}.yaml`);
    if (!fs.existsSync(file)) throw new ConfigurationError(`policy file ${file} does not exist`, { file });
    return PolicyEngine.fromYaml(fs.readFileSync(file, 'utf8'), path.basename(file));
  }

  /** The built-in matrix of plan §9.2, for tests and deployments without a policy directory. */
  static defaultMatrix(): PolicyEngine {
    return PolicyEngine.fromYaml(DEFAULT_POLICY_YAML, 'builtin default');
  }

  /** Checks that no per-tool rule is looser than the row of that tool's side effect (needs the specs). */
  assertConsistentWith(specs: readonly ToolSpec[]): void {
    for (const spec of specs) {
      const t = this.document.tools[spec.name];
      const row = this.document.sideEffects[spec.sideEffect];
      if (t && STRICTNESS[t.decision] < STRICTNESS[row.decision]) {
        throw new ConfigurationError(
          `policy ${this.version}: rule for ${spec.name} (${t.decision}) is looser than the ${spec.sideEffect} row (${row.decision})`,
          { tool: spec.name },
        );
      }
    }
  }

  evaluate(input: PolicyInput): PolicyDecision {
    const d = (
      decision: PolicyDecisionType,
      reasonCode: string,
      explanation: string,
      modifiedArguments: Record<string, unknown> | null = null,
    ): PolicyDecision => ({
      decision,
      reasonCode,
      explanation,
      modifiedArguments,
      policyVersion: this.version,
    });
    const hard = matchHardline(input.arguments);
    if (hard) return d('deny', `hardline_${hard.category}`, `blocked by hardline rule ${hard.id}: ${hard.explanation}`);
    const row = this.document.sideEffects[input.spec.sideEffect] as Rule | undefined;
    if (!row) return d('deny', 'unknown_side_effect', `tool ${input.spec.name} declares an unknown side effect`);
    const tool = this.document.tools[input.spec.name];
    // The stricter of the two wins, whatever the file says.
    const rule = tool && STRICTNESS[tool.decision] >= STRICTNESS[row.decision] ? tool : row;
    const explanation = `${rule.reasonCode.replace(/_/g, ' ')}: ${rule.decision.replace(/_/g, ' ')} (${input.spec.name}, ${input.spec.sideEffect})`;
    if (rule.decision === 'allow_with_modifications') {
      const modified = { ...input.arguments };
      let changed = false;
      for (const [field, max] of Object.entries(rule.clamp)) {
        const v = modified[field];
        if (v === undefined || (typeof v === 'number' && v > max)) {
          modified[field] = max;
          changed = true;
        }
      }
      return changed
        ? d('allow_with_modifications', rule.reasonCode, explanation, modified)
        : d('allow', rule.reasonCode, explanation);
    }
    return d(rule.decision, rule.reasonCode, explanation);
  }

  /** When a new approval of this policy expires (null: never). */
  approvalExpiry(nowMs: number): string | null {
    const ttl = this.document.approvals.ttlSeconds;
    return ttl === null ? null : new Date(nowMs + ttl * 1000).toISOString();
  }
}

const DEFAULT_POLICY_YAML = `
name: builtin
version: 1
side_effects:
  none: { decision: allow, reason_code: pure_computation }
  read: { decision: allow, reason_code: read_isolated_workspace }
  workspace_write: { decision: allow, reason_code: write_isolated_workspace }
  external_write: { decision: require_approval, reason_code: modify_external_data }
  control: { decision: allow, reason_code: control_tool }
approvals: { ttl_seconds: 3600, on_expiry: inform_model }
`;
