import {
  ContainerExecutionEnvironment,
  FakeExecutionEnvironment,
  GvisorExecutionEnvironment,
  NamespaceExecutionEnvironment,
  type ServiceAdapter,
} from '../adapters/sandbox';
import type { SandboxSettings } from '../config/sandbox-settings';

/** The adapter the execution service runs (never constructed in the API or worker). */
export function createServiceAdapter(s: SandboxSettings): ServiceAdapter {
  switch (s.adapter) {
    case 'namespace':
      return new NamespaceExecutionEnvironment({
        root: s.root,
        envAllowlist: s.envAllowlist,
        hostUidBase: s.hostUidBase,
        bridgeDir: s.bridgeDir,
        bwrapPath: s.programs.bwrap,
        unsharePath: s.programs.unshare,
        prlimitPath: s.programs.prlimit,
      });
    case 'gvisor':
      return new GvisorExecutionEnvironment({
        root: s.root,
        envAllowlist: s.envAllowlist,
        runscPath: s.runscPath,
        platform: s.gvisorPlatform ?? undefined,
        bridgeDir: s.bridgeDir,
      });
    case 'container':
      return new ContainerExecutionEnvironment({
        root: s.root,
        engine: s.containerEngine,
        image: s.containerImage,
        runtime: s.containerRuntime,
        envAllowlist: s.envAllowlist,
      });
    case 'fake':
      return new FakeExecutionEnvironment(s.envAllowlist);
    default:
      throw new Error(`SANDBOX_ADAPTER=${s.adapter} has no execution service`);
  }
}
