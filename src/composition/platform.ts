import * as os from 'node:os';
import * as path from 'node:path';
import { loadAgentFiles, YamlAgentCatalog } from '../adapters/config/yaml-agent-catalog';
import { createLogger, silentLogger } from '../adapters/logging/pino-logger';
import { loadMcpConfig, McpHub } from '../adapters/mcp';
import { createDemoProvider } from '../adapters/model/demo';
import { createFakeProvider } from '../adapters/model/fake';
import { bindProfiles, loadProviderRegistry, recordPriceHistory } from '../adapters/model/profiles';
import { assertWritablePrimary, connectDatabase, migrateToLatest } from '../adapters/postgres/connect';
import type { DatabaseHandle } from './infrastructure';
import { Database } from '../adapters/postgres/database';
import { PgNotifier } from '../adapters/postgres/notifications/pg-notifier';
import { PgAppender } from '../adapters/postgres/event-store/pg-appender';
import { PgEventStore } from '../adapters/postgres/event-store/pg-event-store';
import { PgRunJournal } from '../adapters/postgres/event-store/pg-run-journal';
import type { EventStore } from '../ports/event-store';
import type { RunJournal } from '../ports/run-journal';
import { PgListenWakeup } from '../adapters/postgres/notify/pg-listen-wakeup';
import { PgMcpControl } from '../adapters/postgres/notify/pg-mcp-control';
import { rebuildProjections } from '../adapters/postgres/projection-rebuild';
import type { WakeupSource } from '../ports/wakeup';
import type { RebuildOptions, RebuildProgress, RebuildReport } from '../ports/projection-rebuild';
import type { AgentCatalog } from '../ports/agent-catalog';
import type { ArtifactStore } from '../ports/artifact-store';
import type { CheckpointStore, ChildRunStore, RunQueue, RunRepository, TransientPublisher } from '../ports/run-store';
import type { SessionRepository } from '../ports/session-repository';
import type { DemoWriteLog, ToolRecordStore } from '../ports/tool-records';
import { PgTransientPublisher } from '../adapters/postgres/notify/pg-transient-publisher';
import { PgSessionRepository } from '../adapters/postgres/pg-session-repository';
import { PgCheckpointStore } from '../adapters/postgres/runs/pg-checkpoint-store';
import { PgRunQueue } from '../adapters/postgres/runs/pg-run-queue';
import { PgRunRepository } from '../adapters/postgres/runs/pg-run-repository';
import { randomIds, systemClock } from '../adapters/system-clock';
import type { Settings } from '../config/settings';
import { ConfigurationError } from '../domain/errors';
import { runPrincipal } from '../domain/scopes';
import type { Clock, IdFactory } from '../ports/clock';
import type { Logger } from '../ports/logger';
import type { ExposedMetrics } from '../ports/metrics';
import { ModelRouter } from '../runtime/model-router';
import { RunLoop, type CommitObserver, type RunLoopSettings } from '../runtime/run-loop';
import { Worker } from '../runtime/worker';
import { SessionToolCache } from '../runtime/session-tool-cache';
import { HousekeepingWorker, type HousekeepingTask } from '../runtime/housekeeping-worker';
import { PgToolRecords } from '../adapters/postgres/tools/pg-tool-records';
import { PgMcpGrants } from '../adapters/postgres/pg-mcp-grants';
import { PgMcpServers } from '../adapters/postgres/pg-mcp-servers';
import type { McpServerLog } from '../ports/mcp-server-log';
import { effectiveMcpConfig, McpServerRuntime, registerDiscovered, yamlServerEntries } from './mcp-servers';
import { loadSkillPackages, StaticSkillSource } from '../adapters/skills/skill-packages';
import { SkillLoadTool } from '../tools/skills/skill-load';
import type { SkillSource } from '../ports/skills';
import { ApprovalService } from '../application/approvals/approval-service';
import { ChildRunService } from '../application/runs/child-runs';
import { PgChildRuns } from '../adapters/postgres/runs/pg-child-runs';
import { ChildJoinTask } from '../runtime/child-join-task';
import { createDelegateRunTool } from '../tools/delegation/delegate-run';
import { delegationSettingsOf } from '../domain/delegation/brief';
import { PolicyEngine } from '../policy/policy-engine';
import { createPlatformTools } from '../tools/builtin';
import { wireSandbox } from './sandbox';
import { ToolRegistry } from '../tools/registry';
import { RegistryApprovalEditChecks } from '../tools/approval-edit-checks';
import type { ApprovalEditChecks } from '../ports/approval-edits';
import { setupTelemetry } from './telemetry';
import type { Trajectories } from './trajectory';
import { createTrajectories } from './trajectory-wiring';
import { APPROX_ESTIMATOR } from '../context/approx-estimator';
import { ContextEngine } from '../context/engine';
import { TiktokenEstimators } from '../adapters/tokenizer/tiktoken-estimator';
import { compactorOptions } from './context-compactor';
import { createMemoryStore, registerMemoryTools } from './memory-records';
import { loadMemorySettings } from '../config/memory-settings';
import { createFormationTask } from './memory-formation';
import type { MemoryStore } from '../ports/memory-records';
import { wireSchedules, type SchedulesPart } from './schedules';
import { createScheduleTools } from '../tools/schedules/schedule-tools';
import { loadScheduleSettings, type ScheduleSettings } from '../config/schedule-settings';
import type { PrincipalDirectory } from '../ports/principal-directory';
import { createNotifications, type NotificationServices } from './notifications';
import { assertAgentArgumentRules } from './argument-rules';
import { openArtifactStore } from './artifact-store';

export type { RebuildProgress, RebuildReport };

/**
 * The composition root: the one place adapters are bound to ports. The API process, the worker
 * process, the CLI and the tests all build their object graph here.
 */
export interface Platform {
  readonly settings: Settings;
  readonly handle: DatabaseHandle;
  readonly db: Database;
  readonly store: EventStore;
  /** The lease holder's fenced writes and checkpoints (ADR 0026). */
  readonly journal: RunJournal;
  readonly runs: RunRepository;
  readonly sessions: SessionRepository;
  readonly checkpoints: CheckpointStore;
  readonly queue: RunQueue;
  readonly agents: AgentCatalog;
  readonly registry: ToolRegistry;
  /** The artifact store (plan §7, §18.4): bytes under `settings.artifactDir`, metadata in `artifacts`. */
  readonly artifacts: ArtifactStore;
  /** Supervised MCP servers of config/mcp.yaml (docs/mcp.md); empty when none are configured. */
  readonly mcp: McpHub;
  /** Skills (SKILL.md packages in SKILLS_DIR + MCP prompts), read at startup (docs/skills.md). */
  readonly skills: SkillSource;
  /** Operator grants of MCP servers to agents, audited as events (docs/mcp.md). */
  readonly mcpGrants: PgMcpGrants;
  /** Schedules: the service every surface uses, the read models and the scheduler (ADR 0034). */
  readonly schedules: SchedulesPart;
  /** Operator MCP actions broadcast to every process (NOTIFY agent_mcp_control; docs/mcp.md). */
  readonly mcpControl: PgMcpControl;
  /** MCP servers managed at run time (ADR 0052): the server log, this process's side, the agent ids. */
  readonly mcpServers: {
    readonly store: McpServerLog;
    readonly runtime: McpServerRuntime;
    readonly agentIds: readonly string[];
  };
  /** Trajectory export, consent records and export jobs (plan §31, docs/trajectories.md). */
  readonly trajectories: Trajectories;
  /** Tool lifecycle read models and the demo write record (plan §8.4, §9.3). */
  readonly toolRecords: ToolRecordStore & DemoWriteLog;
  /** The inbox, webhook endpoints and notification preferences (issue 31, ADR 0036). */
  readonly notifications: NotificationServices;
  readonly policy: PolicyEngine;
  /** Approval lifecycle edges (expiry reaper, resolution) without the Nest buses. */
  readonly approvals: ApprovalService;
  /** Schema and policy checks of an "approve with edits" (ADR 0044). */
  readonly approvalEdits: ApprovalEditChecks;
  /** Child runs of delegate.run (ADR 0037): the join, cancellation of a parent's children, the run view. */
  readonly childRuns: ChildRunService;
  readonly childRunStore: ChildRunStore;
  readonly router: ModelRouter;
  readonly transient: TransientPublisher;
  /** The process's context engine (plan §11): every run loop of the platform builds through it. */
  readonly context: ContextEngine;
  /** Long-term memory records (issue 30, ADR 0035): the governed store, its recall and erasure. */
  readonly memories: MemoryStore;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly log: Logger;
  /** This process's plan §19 metrics (`GET /metrics`); shared by every platform in the process. */
  readonly metrics: ExposedMetrics;
  createRunLoop(overrides?: Partial<RunLoopSettings>, onCommitted?: CommitObserver): RunLoop;
  /** A worker; unless restricted to one run it also runs the approval expiry reaper every `reaperIntervalMs` (default 5 s). */
  createWorker(opts?: WorkerOptions): Worker;
  /** Replays the event log into fresh read models (see docs/projections.md). */
  rebuildProjections(opts: Omit<RebuildOptions, never>): Promise<RebuildReport>;
  /** A NOTIFY subscription on `channel` that reconnects forever. */
  listen(channel: string): WakeupSource;
  close(): Promise<void>;
}

/** What a caller may choose about a worker; the rest comes from the settings. */
export interface WorkerOptions {
  workerId?: string;
  concurrency?: number;
  pollIntervalMs?: number;
  drainMs?: number;
  onlyRunId?: string;
  reaperIntervalMs?: number;
  /** Webhook delivery pass interval (ADR 0036); default 250 ms. */
  notifierIntervalMs?: number;
  /** First webhook retry delay (doubles per failure, with jitter); default 1 s. */
  notifierRetryBaseMs?: number;
  /** Sees every commit of this worker's run loop before the loop goes on (RunLoopDeps.onCommitted). */
  onCommitted?: CommitObserver;
}

export interface PlatformOptions {
  readonly service: string;
  /** Use an already running database (tests); otherwise DATABASE_URL or the embedded server. */
  readonly databaseUrl?: string;
  /** The query pools' URL through a transaction pooler (tests); otherwise DATABASE_POOL_URL, if set. */
  readonly databasePoolUrl?: string;
  readonly quiet?: boolean;
  readonly logger?: Logger;
  readonly migrate?: boolean;
  readonly poolSize?: number;
  /** The platform's clock (tests move time with it); default the system clock. */
  readonly clock?: Clock;
  /** Fields replacing every MCP server's restart policy (tests); otherwise each server's `restart` in mcp.yaml. */
  readonly mcpRestartPolicy?: {
    readonly strategy?: 'on_failure' | 'always' | 'never';
    readonly baseDelayMs?: number;
    readonly maxDelayMs?: number;
    readonly maxRestarts?: number;
    readonly windowMs?: number;
  };
  /** Who exists and with what scopes, for the scheduler (default: per AUTH_MODE, ADR 0034). */
  readonly principals?: PrincipalDirectory;
  /** Overrides of the scheduling settings read from the environment (tests, the bench). */
  readonly scheduleSettings?: Partial<ScheduleSettings>;
}

export async function createPlatform(settings: Settings, opts: PlatformOptions): Promise<Platform> {
  const log =
    opts.logger ?? (opts.quiet ? silentLogger : createLogger({ level: settings.logLevel, service: opts.service }));
  const telemetry = setupTelemetry(opts.service, process.env, log);
  const handle = opts.databaseUrl
    ? { url: opts.databaseUrl, embedded: null, close: async () => undefined }
    : await connectDatabase({ databaseUrl: settings.databaseUrl, dataDir: settings.dataDir, log: (l) => log.info(l) });
  // What to close, newest first, if building the platform fails half-way.
  const undo: (() => Promise<void>)[] = [];
  try {
    // Before migrating: a replica would answer every write with an error, not refuse once.
    await assertWritablePrimary(handle.url);
    if (opts.migrate !== false) await migrateToLatest(handle.url);
    const services = await openServices({ settings, opts, url: handle.url, log, metrics: telemetry.metrics, undo });
    return platformOf(settings, { handle, log, telemetry }, services);
  } catch (e) {
    for (const close of undo.reverse()) await close();
    await handle.close();
    throw e;
  }
}

/** Everything the platform is made of, opened over one database pool. */
type Services = Awaited<ReturnType<typeof openServices>>;

interface ServiceDeps {
  readonly settings: Settings;
  readonly opts: PlatformOptions;
  readonly url: string;
  readonly log: Logger;
  readonly metrics: ExposedMetrics;
  readonly undo: (() => Promise<void>)[];
}

/** Opens the stores, reads the configuration (agents, tools, policy, providers) and builds the services. */
/** Schedules (ADR 0034): the service, the scheduler's parts, and the conversational tools over the same service. */
function openSchedules(
  d: Omit<Parameters<typeof wireSchedules>[0], 'scheduleSettings' | 'principals'> & { opts: PlatformOptions },
): SchedulesPart {
  const { opts, ...rest } = d;
  const schedules = wireSchedules({
    ...rest,
    scheduleSettings: { ...loadScheduleSettings(process.env), ...opts.scheduleSettings },
    principals: opts.principals,
  });
  for (const tool of createScheduleTools(schedules.service)) rest.registry.register(tool);
  return schedules;
}

/**
 * Long-term memory (ADR 0035) and the context engine that injects its snapshot: one engine per
 * process, whose per-session history cache serves every worker (plan §11). An erasure drops this
 * process's folds of the sessions it rewrote, hence the late-bound engine.
 */
function openMemoryAndContext(d: {
  settings: Settings;
  db: Database;
  appender: PgAppender;
  store: PgEventStore;
  clock: Clock;
  ids: IdFactory;
  log: Logger;
  policy: Parameters<typeof createMemoryStore>[0]['policy'];
  router: Parameters<typeof compactorOptions>[1];
  registry: Parameters<typeof registerMemoryTools>[0];
}): { memories: MemoryStore; context: ContextEngine; formation: HousekeepingTask | null } {
  const { settings, db, appender, store, clock, ids, log, policy, router, registry } = d;
  const engine: { current?: ContextEngine } = {};
  const memory = loadMemorySettings(process.env);
  const memories = createMemoryStore({
    db,
    embeddings: memory,
    appender,
    clock,
    ids,
    log,
    policy,
    forgetSessions: (s) => engine.current?.forget(s),
  });
  const context = new ContextEngine(store, {
    estimators: new TiktokenEstimators(APPROX_ESTIMATOR),
    log,
    ...compactorOptions(settings, router, ids),
    memory: { store: memories, items: memory.snapshotItems },
  });
  engine.current = context;
  registerMemoryTools(registry, policy, memories, store);
  const formation = createFormationTask({ memory, db, memories, events: store, router, clock, ids, log });
  return { memories, context, formation };
}

/**
 * The query pool. Behind a transaction pooler (DATABASE_POOL_URL) only this pool goes through it;
 * LISTEN, migrations and rebuilds keep the direct URL (docs/operations/pooling.md).
 */
function openQueryPool(settings: Settings, opts: ServiceDeps['opts'], url: string): Database {
  const poolUrl = opts.databasePoolUrl ?? settings.databasePoolUrl;
  const size = opts.poolSize ?? settings.databasePoolSize;
  const timeouts = settings.databaseTimeouts;
  return poolUrl
    ? new Database(poolUrl, size, 'transaction-pooler', timeouts)
    : new Database(url, size, 'direct', timeouts);
}

/** The model router, refusing a default agent it cannot route; the price history recorded (best effort). */
async function openModelRouter(
  settings: Settings,
  clock: Clock,
  agents: YamlAgentCatalog,
  db: Database,
  log: Logger,
): Promise<ModelRouter> {
  const { router, providerRegistry } = createModelRouter(settings, clock);
  const defaultAgent = await agents.current(settings.defaultAgentId);
  if (defaultAgent) router.assertRoutable(defaultAgent);
  await recordPriceHistory(db, providerRegistry).catch((e: unknown) =>
    log.warn('model price history not recorded', { error: String(e) }),
  );
  return router;
}

async function openServices({ settings, opts, url, log, metrics, undo }: ServiceDeps) {
  const db = openQueryPool(settings, opts, url);
  const clock = opts.clock ?? systemClock;
  const ids = randomIds;
  // One append per process, shared by the event store, the run journal, the claim and the MCP
  // grant audit: one cache of session rows, one statement encoding (ADR 0026).
  const appender = new PgAppender(db, clock);
  const store = new PgEventStore(db, clock, appender);
  const journal = new PgRunJournal(appender);
  const runs = new PgRunRepository(db);
  const sessions = new PgSessionRepository(db);
  const checkpoints = new PgCheckpointStore(db);
  const queue = new PgRunQueue(db, appender, clock);
  const agentFiles = loadAgentFiles(path.join(settings.configDir, 'agents'));
  assertAgentArgumentRules(agentFiles);
  // Refused before anything starts: malformed config/mcp.yaml names the server and field.
  const mcpConfig = loadMcpConfig(settings.configDir);
  const agents = await YamlAgentCatalog.open(db, agentFiles, process.env.AGENT_MODEL_POLICY || null);
  const toolRecords = new PgToolRecords(db);
  const opened = openArtifactStore(settings, { db, clock, ids, log, events: store });
  undo.push(async () => opened.close());
  const artifacts = opened.store;
  const { registry, sandbox, mcp, mcpControl, mcpRuntime, skills, policy } = await wireTools({
    settings,
    opts,
    agentFiles,
    mcpConfig,
    db,
    url,
    toolRecords,
    artifacts,
    metrics,
    log,
    undo,
  });
  const approvalEdits = new RegistryApprovalEditChecks(registry, policy);
  const approvals = new ApprovalService({ store, runs, sessions, records: toolRecords, clock, edits: approvalEdits });
  // Subagents (ADR 0037): the children's reads and the join.
  const childRunStore = new PgChildRuns(db);
  const childRuns = new ChildRunService({ store, runs, sessions, records: toolRecords, children: childRunStore, log });
  const router = await openModelRouter(settings, clock, agents, db, log);
  const transient = new PgTransientPublisher(db, log);
  const sessionTools = new SessionToolCache();
  const trajectories = createTrajectories({ db, agents, artifacts, clock, ids, log });
  const leaseMs = settings.leaseSeconds * 1000;
  const { memories, context, formation } = openMemoryAndContext({
    settings,
    db,
    appender,
    store,
    clock,
    ids,
    log,
    policy,
    router,
    registry,
  });
  const schedules = openSchedules({ settings, opts, db, url, appender, store, agents, registry, clock, ids, log });
  return {
    notifications: createNotifications(db, store),
    closeArtifacts: () => opened.close(),
    db,
    clock,
    ids,
    appender,
    schedules,
    store,
    journal,
    runs,
    sessions,
    checkpoints,
    queue,
    agents,
    toolRecords,
    artifacts,
    registry,
    childRuns,
    childRunStore,
    sandbox,
    mcp,
    mcpControl,
    mcpRuntime,
    agentIds: agentFiles.map((a) => a.id),
    skills,
    policy,
    approvals,
    approvalEdits,
    router,
    transient,
    sessionTools,
    trajectories,
    leaseMs,
    context,
    memories,
    formation,
  };
}

interface ProcessParts {
  readonly handle: DatabaseHandle;
  readonly log: Logger;
  readonly telemetry: ReturnType<typeof setupTelemetry>;
}

/** The platform's surface over its services: run loops and workers made to order, and an orderly close. */
function platformOf(settings: Settings, { handle, log, telemetry }: ProcessParts, services: Services): Platform {
  const { db, clock, ids, store, journal, runs, sessions, checkpoints, queue, router, registry, agents, transient } =
    services;
  const { toolRecords, policy, sessionTools, artifacts, context, skills, leaseMs } = services;
  const { mcp, mcpControl, trajectories, approvals, memories, childRuns, childRunStore } = services;
  const createRunLoop = (overrides: Partial<RunLoopSettings> = {}, onCommitted?: CommitObserver) =>
    new RunLoop(
      {
        store,
        journal,
        runs,
        checkpoints,
        queue,
        router,
        registry,
        agents,
        transient,
        clock,
        ids,
        log,
        // ADR 0032: a run executes with exactly the scope set recorded when it was queued.
        principalFor: runPrincipal,
        records: toolRecords,
        policy,
        metrics: telemetry.metrics,
        sessionTools,
        artifacts: { store: artifacts, ttlSeconds: settings.artifactToolResultTtlSeconds },
        context,
        skills,
        onCommitted,
        delegation: { enabled: settings.delegationEnabled, admits: admission(settings, childRunStore) },
      },
      { leaseMs, maxModelAttempts: 3, retryBaseMs: 200, retryMaxMs: 5000, ...overrides },
    );
  return {
    settings,
    handle,
    db,
    store,
    journal,
    runs,
    sessions,
    checkpoints,
    queue,
    agents,
    registry,
    artifacts,
    mcp,
    mcpGrants: new PgMcpGrants(db, services.appender, agents, clock),
    schedules: services.schedules,
    mcpControl,
    mcpServers: {
      store: new PgMcpServers(db, services.appender),
      runtime: services.mcpRuntime,
      agentIds: services.agentIds,
    },
    trajectories,
    skills,
    toolRecords,
    notifications: services.notifications,
    policy,
    approvals,
    approvalEdits: services.approvalEdits,
    childRuns,
    childRunStore,
    router,
    transient,
    context,
    memories,
    clock,
    ids,
    log,
    metrics: telemetry.metrics,
    createRunLoop,
    createWorker: workerFactory({
      settings,
      memories,
      formation: services.formation,
      queue,
      createRunLoop,
      approvals,
      childRuns,
      policy,
      artifacts,
      clock,
      ids,
      log,
      leaseMs,
      db,
      wakeupUrl: handle.url,
    }),
    rebuildProjections: (o) => rebuildOnDirect(handle.url, o),
    listen: (channel) => new PgListenWakeup(handle.url, log, channel),
    close: () => closePlatform({ handle, log, telemetry }, services),
  };
}

/** Stops what the platform started, dependents first: MCP, the sandbox, exports, providers, then the database. */
async function closePlatform({ handle, telemetry }: ProcessParts, services: Services): Promise<void> {
  await services.mcpControl.close();
  await services.mcp.close();
  await services.sandbox.close();
  await services.trajectories.jobs.drain();
  await services.router.close();
  await services.db.close();
  services.closeArtifacts();
  await handle.close();
  await telemetry.tracing?.shutdown();
}

/**
 * The rebuild runs on a pool of its own, direct and without the query timeout: it holds a
 * session-level advisory lock and temporary tables on one connection (which a transaction pooler
 * would hand to other clients between transactions), and its statements over a large log may
 * legitimately run longer than any request's.
 */
async function rebuildOnDirect(directUrl: string, o: RebuildOptions): Promise<RebuildReport> {
  const direct = new Database(directUrl, 4, 'direct', { connectMs: 10_000, queryMs: 0 });
  try {
    return await rebuildProjections(direct, o);
  } finally {
    await direct.close();
  }
}

interface ToolWiringDeps {
  readonly settings: Settings;
  readonly opts: PlatformOptions;
  readonly agentFiles: ReturnType<typeof loadAgentFiles>;
  readonly mcpConfig: ReturnType<typeof loadMcpConfig>;
  readonly db: Database;
  /** The database URL, for the MCP control channel's LISTEN connection. */
  readonly url: string;
  readonly toolRecords: PgToolRecords;
  readonly artifacts: ArtifactStore;
  readonly metrics: ExposedMetrics;
  readonly log: Logger;
  /** Where to put a close for whatever this starts, in case the platform fails later. */
  readonly undo: (() => Promise<void>)[];
}

/**
 * The tool registry and everything that feeds it: the built-in tools, the sandbox client, the MCP
 * servers (and their operator control channel) and the skills; then the policy, checked against it.
 */
async function wireTools(d: ToolWiringDeps) {
  const { settings, opts, log, undo } = d;
  const registry = new ToolRegistry();
  // Per-session workspaces live under $AGENT_DATA_DIR/workspaces/<tenant>/<session>.
  for (const tool of createPlatformTools({
    workspaceRoot: path.join(settings.dataDir, 'workspaces'),
    demoWrites: d.toolRecords,
    artifacts: d.artifacts,
  }))
    registry.register(tool);
  // sandbox.run_command: a client of the execution service `agent sandboxd` (docs/sandbox.md).
  const sandbox = wireSandbox(settings, { artifacts: d.artifacts, log });
  registry.register(sandbox.tool);
  // sandbox.run_program (plan §8.5): a program whose bridged tool calls go through the run's pipeline.
  registry.register(sandbox.runProgramTool(registry));
  // An isolated server (isolation: namespace) never sees the data directory, artifacts, backups or keys.
  // config/mcp.yaml seeds the set; the server log (mcp_servers) adds, changes and removes (ADR 0052).
  const mcpConfig = await effectiveMcpConfig(d.db, settings.configDir, d.mcpConfig, log);
  const mcp = new McpHub(mcpConfig, log, opts.mcpRestartPolicy, d.metrics, {
    hidden: [
      settings.dataDir,
      settings.artifactDir,
      settings.backupDir,
      path.resolve('.env'),
      ...(settings.authTokensFile ? [settings.authTokensFile] : []),
    ],
    // isolation: gvisor — runsc's state and each server's OCI bundle (a root of empty mountpoints).
    gvisorStateDir: path.join(settings.dataDir, 'mcp-gvisor'),
  });
  undo.push(() => mcp.close());
  await registerMcpTools(mcp, d.agentFiles, registry, log, new Set(d.mcpConfig.servers.map((s) => s.id)));
  const mcpRuntime = new McpServerRuntime({
    hub: mcp,
    registry,
    db: d.db,
    configDir: settings.configDir,
    yaml: yamlServerEntries(settings.configDir),
    log,
  });
  // Operator start/stop/restart taken by another process (the API) reach this one's supervisors too.
  const mcpControl = new PgMcpControl(d.url, d.db, log, {
    service: opts.service,
    ackTimeoutMs: settings.mcpControlAckTimeoutMs,
  });
  undo.push(() => mcpControl.close());
  // Every process listens: a server added at run time reaches processes that started with none.
  await mcpControl.listen({
    has: (id) => mcp.has(id),
    control: (id, action) => mcp.control(id, action),
    sync: (id) => mcpRuntime.sync(id),
  });
  // Skills: a refused package is logged with its reasons and not offered (agent skills validate).
  const skillPackages = loadSkillPackages(process.env.SKILLS_DIR || path.join(settings.configDir, 'skills'));
  for (const r of skillPackages.refused) log.warn('skill package refused', { dir: r.dir, reasons: r.reasons });
  const skills = await StaticSkillSource.create(skillPackages.skills, mcp.promptProviders());
  registry.register(new SkillLoadTool(skills));
  // delegate.run (ADR 0037): registered only when DELEGATION_ENABLED=1 or an agent's YAML enables it.
  if (settings.delegationEnabled || d.agentFiles.some((a) => delegationSettingsOf(a).enabled === true))
    registry.register(createDelegateRunTool());
  const policy = PolicyEngine.load(path.join(settings.configDir, 'policies'));
  policy.assertConsistentWith(registry.list().map((t) => t.spec));
  return { registry, sandbox, mcp, mcpControl, mcpRuntime, skills, policy };
}

/**
 * Starts every configured MCP server (on boot) and registers its discovered tools, so a grant
 * replaced at run time (PUT …/mcp-grants/…) finds them; only granted agents are ever offered them.
 * A tool the registry refuses (e.g. a schema Ajv cannot compile) is disabled with a logged reason;
 * an unreachable server is logged and its supervisor keeps restarting it (docs/mcp.md).
 */
async function registerMcpTools(
  mcp: McpHub,
  agentFiles: readonly { id: string; mcpServers?: readonly string[] }[],
  registry: ToolRegistry,
  log: Logger,
  seeded: ReadonlySet<string>,
): Promise<void> {
  const granted = new Set<string>();
  for (const a of agentFiles)
    for (const s of a.mcpServers ?? []) {
      // A YAML server removed through the API (ADR 0052) is logged, not fatal: its tools are simply absent.
      if (!mcp.serverIds.includes(s) && seeded.has(s)) {
        log.warn('agent names an mcp server removed at run time', { agentId: a.id, server: s });
        continue;
      }
      if (!mcp.serverIds.includes(s))
        throw new ConfigurationError(
          `agent ${a.id}: mcp_servers names ${s}, which config/mcp.yaml does not configure`,
          {
            agentId: a.id,
            server: s,
          },
        );
      granted.add(s);
    }
  for (const result of await Promise.all([...mcp.serverIds].sort().map((s) => mcp.discover(s)))) {
    for (const tool of result.tools) {
      try {
        registry.register(tool);
      } catch (e) {
        if (!(e instanceof ConfigurationError)) throw e;
        log.warn('mcp tool disabled', { server: result.serverId, tool: tool.spec.name, reason: e.message });
        mcp.markDisabled(result.serverId, tool.spec.name, e.message);
      }
    }
  }
  // Re-discovery (tools/list_changed, a restart, an operator start): the registry follows the
  // server; sessions keep the tool list they pinned (SessionToolCache).
  mcp.onRediscovered = (result) => {
    registerDiscovered(mcp, registry, result, log);
    log.info('mcp tools re-discovered', { server: result.serverId, tools: result.tools.length });
  };
}

/** The model router over the built-in demo/fake providers and the provider profiles of config/providers/. */
function createModelRouter(settings: Settings, clock: Clock) {
  // Provider profiles (config/providers/*.yaml); a profile whose key is not set is bound as unavailable.
  const providerRegistry = loadProviderRegistry(path.join(settings.configDir, 'providers'), process.env);
  const router = new ModelRouter(
    [
      createDemoProvider({ clock, latencyMs: settings.fakeModelLatencyMs }),
      createFakeProvider({
        fixturesDir: path.join(settings.configDir, 'model-fixtures'),
        clock,
        latencyMs: settings.fakeModelLatencyMs,
      }),
    ],
    { registry: providerRegistry, bindings: bindProfiles(providerRegistry, process.env) },
  );
  return { router, providerRegistry };
}

interface WorkerDeps {
  readonly settings: Settings;
  /** Long-term memory: its expiry runs with the housekeeping jobs (ADR 0035). */
  readonly memories: MemoryStore;
  /** End-of-run memory formation (ADR 0043); null when MEMORY_FORMATION=off. */
  readonly formation: HousekeepingTask | null;
  readonly queue: RunQueue;
  readonly createRunLoop: (overrides?: Partial<RunLoopSettings>, onCommitted?: CommitObserver) => RunLoop;
  readonly approvals: ApprovalService;
  readonly childRuns: ChildRunService;
  readonly policy: PolicyEngine;
  readonly artifacts: ArtifactStore;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly log: Logger;
  readonly leaseMs: number;
  readonly db: Database;
  /** Where the worker LISTENs for new work. */
  readonly wakeupUrl: string;
}

/**
 * The jobs a worker runs beside its runs: approval expiry, the artifact sweep (docs/artifacts.md;
 * AGENT_ARTIFACT_SWEEP_SECONDS=0 disables it) and webhook delivery from the notifications outbox
 * (ADR 0036: every worker process runs the notifier; its claims are SKIP LOCKED, so several share it).
 */
function housekeepingTasks(d: WorkerDeps, o: WorkerOptions): HousekeepingTask[] {
  const { onExpiry, warnBeforeSeconds } = d.policy.document.approvals;
  const reaper = {
    name: 'approval-expiry',
    everyMs: o.reaperIntervalMs ?? 5000,
    // The "expires in N minutes" warning first (issue 31), then the expiry itself.
    run: async () => {
      if (warnBeforeSeconds !== null) await d.approvals.warnExpiring(warnBeforeSeconds);
      return d.approvals.expireDue(onExpiry);
    },
  };
  const artifactSweep = {
    name: 'artifact-expiry',
    everyMs: d.settings.artifactSweepSeconds * 1000,
    run: () => d.artifacts.sweepExpired(d.clock.nowIso()),
  };
  const notifier = new PgNotifier(d.db, d.log, { retryBaseMs: o.notifierRetryBaseMs, nowMs: () => d.clock.nowMs() });
  const delivery = { name: 'webhook-delivery', everyMs: o.notifierIntervalMs ?? 250, run: () => notifier.runOnce() };
  // Memories past expires_at are already never recalled; this records their memory.expired.
  const memoryExpiry = { name: 'memory-expiry', everyMs: 60_000, run: () => d.memories.expireDue(d.clock.nowIso()) };
  const memoryTasks = d.formation ? [memoryExpiry, d.formation] : [memoryExpiry];
  return d.settings.artifactSweepSeconds > 0
    ? [reaper, artifactSweep, delivery, ...memoryTasks, childJoin(d)]
    : [reaper, delivery, ...memoryTasks, childJoin(d)];
}

/** The join of child runs (ADR 0037): on every child's terminal NOTIFY, with a sweep behind it. */
function childJoin(d: WorkerDeps, onlyRunId?: string): ChildJoinTask {
  const wakeups = new PgListenWakeup(d.wakeupUrl, d.log, 'run_join');
  return new ChildJoinTask(d.childRuns, wakeups, d.log, d.settings.delegationSweepMs, onlyRunId);
}

/**
 * Per-tenant admission of a delegation's children (plan §27.6): they count against
 * API_MAX_ACTIVE_RUNS_PER_TENANT like any run; 0 disables the ceiling.
 */
function admission(settings: Settings, children: ChildRunStore) {
  const ceiling = settings.apiMaxActiveRunsPerTenant;
  if (ceiling <= 0) return undefined;
  return async (tenantId: string, n: number): Promise<string | null> => {
    const active = await children.activeRunCount(tenantId);
    return active + n > ceiling
      ? `the tenant has ${active} active runs; ${n} more would pass its ceiling of ${ceiling}`
      : null;
  };
}

/** Platform.createWorker: a worker, which also runs the housekeeping jobs unless it is restricted to one run. */
function workerFactory(d: WorkerDeps): (o?: WorkerOptions) => Worker {
  const { settings, queue, createRunLoop, clock, ids, log } = d;
  return (o = {}) => {
    const workerSettings = {
      workerId: o.workerId ?? `${os.hostname()}:${process.pid}:${ids.uuid().slice(0, 8)}`,
      concurrency: o.concurrency ?? settings.workerConcurrency,
      leaseMs: d.leaseMs,
      pollIntervalMs: o.pollIntervalMs ?? settings.pollIntervalMs,
      drainMs: o.drainMs ?? 10_000,
      onlyRunId: o.onlyRunId,
    };
    return new HousekeepingWorker(
      queue,
      createRunLoop({}, o.onCommitted),
      new PgListenWakeup(d.wakeupUrl, log),
      clock,
      ids,
      log,
      workerSettings,
      // A worker restricted to one run (CLI, eval harness) does not reap other runs' approvals; it
      // joins that run's children, which it also runs.
      o.onlyRunId ? [childJoin(d, o.onlyRunId)] : housekeepingTasks(d, o),
    );
  };
}
