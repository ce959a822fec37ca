import {
  ContainerExecutionEnvironment,
  NamespaceExecutionEnvironment,
  PROBE_LIMITS as SANDBOX_PROBE_LIMITS,
} from '../../adapters/sandbox';
import { loadSandboxSettings } from '../../config/sandbox-settings';
import type { Settings } from '../../config/settings';
import type { ExecutionEnvironment } from '../../ports/execution-environment';
import { sandboxStatus } from '../prerequisites';
import { createServiceAdapter } from '../service-adapter';
import { fail, messageOf, pass, type CheckResult } from './check';

// /proc/net/dev lists every interface the program sees: room for more than the self-check's output.
const PROBE_LIMITS = { ...SANDBOX_PROBE_LIMITS, maxOutputBytes: 16 * 1024 };

/**
 * The network interfaces a sandboxed program sees, from its own /proc/net/dev. Isolated means none
 * but the loopback (which the adapter keeps down): a real program in a real sandbox, not a config read.
 */
async function interfacesInside(adapter: ExecutionEnvironment): Promise<string[]> {
  const env = await adapter.provision({ tenantId: 'doctor', runId: 'doctor', leaseSeconds: 30, limits: PROBE_LIMITS });
  try {
    const r = await adapter.execute(env, { argv: ['/bin/cat', '/proc/net/dev'] });
    if (r.exitCode !== 0)
      throw new Error(`the probe exited ${r.exitCode}: ${Buffer.from(r.stderr).toString('utf8').trim()}`);
    return Buffer.from(r.stdout)
      .toString('utf8')
      .split('\n')
      .map((l) => /^\s*([^:\s]+):/.exec(l)?.[1])
      .filter((n): n is string => n !== undefined);
  } finally {
    await adapter.destroy(env);
  }
}

/**
 * The sandbox: its programs present (bubblewrap, unshare, prlimit, or the container engine), the
 * adapter's own self-check, and a no-network probe run inside a real sandbox.
 */
export async function checkSandbox(settings: Settings): Promise<CheckResult[]> {
  const s = loadSandboxSettings(process.env, settings.dataDir);
  const status = sandboxStatus(s, settings.authMode);
  if (status.state === 'disabled') return [pass('sandbox', `not used: ${status.reason}`)];
  if (status.state === 'unavailable') return [fail('sandbox', status.reason, status.fix)];
  if (s.adapter === 'fake') return [pass('sandbox', 'SANDBOX_ADAPTER=fake (runs nothing; tests only)')];
  const adapter = createServiceAdapter(s);
  try {
    if (adapter instanceof ContainerExecutionEnvironment) await adapter.reachable();
    if (adapter instanceof NamespaceExecutionEnvironment) await adapter.selfCheck();
  } catch (e) {
    return [fail('sandbox', `${s.adapter} adapter cannot start a sandbox: ${messageOf(e)}`, 'see docs/sandbox.md')];
  }
  const programs = pass('sandbox', `${s.adapter} adapter starts sandboxes`);
  try {
    const seen = await interfacesInside(adapter);
    const leaks = seen.filter((n) => n !== 'lo');
    return leaks.length === 0
      ? [programs, pass('sandbox isolation', `no network inside a sandbox (interfaces: ${seen.join(', ') || 'none'})`)]
      : [
          programs,
          fail(
            'sandbox isolation',
            `a sandboxed program sees network interfaces ${leaks.join(', ')}`,
            'the network namespace is not applied: check that unshare(2)/bubblewrap may create namespaces here (docs/sandbox.md)',
          ),
        ];
  } catch (e) {
    return [programs, fail('sandbox isolation', `the no-network probe failed: ${messageOf(e)}`, 'see docs/sandbox.md')];
  }
}
