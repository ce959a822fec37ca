import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The sandbox's seccomp filter (issue 28, plan §28): default allow, and EPERM for the syscall
 * families a sandboxed program has no business calling and that kernel escapes are built on —
 * debugging other processes, mounting, the kernel keyring, eBPF, perf events, userfaultfd, kexec,
 * module loading, namespace creation and entry, and a few more. One list, two uses:
 *
 * - the namespace adapter hands bubblewrap a classic BPF program (`bwrap --seccomp FD`) compiled
 *   once per service by Debian's libseccomp through its Python binding (`python3-seccomp`): no
 *   hand-assembled BPF. bubblewrap loads it last, just before it execs the command, so it covers the
 *   command and everything it starts, not bubblewrap's own setup;
 * - the gVisor adapter puts the same list in the OCI bundle's `linux.seccomp` (runsc `--oci-seccomp`
 *   makes gVisor's kernel enforce it on the program).
 *
 * Architectures other than the native one are not in the filter, so their syscalls (the 32-bit
 * `int 0x80` ABI, x32) hit libseccomp's bad-architecture action and kill the process: a filter keyed
 * on x86-64 numbers cannot be sidestepped through another table.
 */
export const DENIED_SYSCALLS: readonly string[] = [
  // Debugging and reading another process's memory.
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'pidfd_getfd',
  'kcmp',
  // Mounting and changing the root.
  'mount',
  'umount2',
  'pivot_root',
  'chroot',
  'move_mount',
  'open_tree',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'mount_setattr',
  // The kernel keyring.
  'keyctl',
  'add_key',
  'request_key',
  // eBPF, perf events, userfaultfd (the usual heap-spray and race-widening primitives).
  'bpf',
  'perf_event_open',
  'userfaultfd',
  // kexec and kernel modules.
  'kexec_load',
  'kexec_file_load',
  'init_module',
  'finit_module',
  'delete_module',
  // Namespaces: creating (clone flags below) and entering.
  'unshare',
  'setns',
  // io_uring (a large attack surface that bypasses this filter for the calls it performs).
  'io_uring_setup',
  'io_uring_enter',
  'io_uring_register',
  // Host administration.
  'swapon',
  'swapoff',
  'reboot',
  'acct',
  'quotactl',
  'open_by_handle_at',
  'name_to_handle_at',
  'syslog',
  'iopl',
  'ioperm',
  'lookup_dcookie',
  'vhangup',
  'settimeofday',
  'clock_settime',
  'clock_adjtime',
  'adjtimex',
  'fanotify_init',
  'uselib',
  'personality',
  'sethostname',
  'setdomainname',
];

/** CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME. */
export const CLONE_NAMESPACE_FLAGS: readonly number[] = [
  0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080,
];

const PYTHON = '/usr/bin/python3';

/** libseccomp through python3-seccomp: one rule per denied name; clone with a namespace flag; clone3 → ENOSYS. */
const COMPILER = `
import errno, json, sys
import seccomp
names, flags = json.loads(sys.argv[1])
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
for n in names:
    try:
        f.add_rule(seccomp.ERRNO(errno.EPERM), n)
    except Exception:
        pass  # not a syscall of this architecture
for flag in flags:
    f.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
# clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc fall back to clone.
f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
# TIOCSTI pushes input into a terminal's queue (a classic way out through a shared tty).
f.add_rule(seccomp.ERRNO(errno.EPERM), "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xffffffff, 0x5412))
with open(sys.argv[2], "wb") as out:
    f.export_bpf(out)
`;

/** Why the filter cannot be built here (with the fix), or null when it can. */
export function seccompUnavailable(): string | null {
  if (!fs.existsSync(PYTHON))
    return `${PYTHON} is missing: the seccomp filter is compiled with Debian's libseccomp through python3-seccomp (apt-get install -y python3-seccomp)`;
  return null;
}

/**
 * Compiles the filter into `dir` once (the file name carries the list's hash, so a changed list
 * makes a new one) and returns its path. Throws with the fix when python3-seccomp is missing.
 */
export async function compileSeccompFilter(dir: string): Promise<string> {
  const input = JSON.stringify([DENIED_SYSCALLS, CLONE_NAMESPACE_FLAGS]);
  const hash = createHash('sha256').update(COMPILER).update(input).digest('hex').slice(0, 16);
  const file = path.join(dir, `.seccomp-${hash}.bpf`);
  if (fs.existsSync(file)) return file;
  const missing = seccompUnavailable();
  if (missing) throw new Error(missing);
  const tmp = `${file}.${process.pid}.tmp`;
  await new Promise<void>((resolve, reject) =>
    execFile(PYTHON, ['-c', COMPILER, input, tmp], { env: { PATH: '/usr/bin:/bin' } }, (err, _o, stderr) =>
      err
        ? reject(
            new Error(
              `could not compile the seccomp filter: ${String(stderr || err.message).trim()} (apt-get install -y python3-seccomp)`,
            ),
          )
        : resolve(),
    ),
  );
  await fs.promises.chmod(tmp, 0o644);
  await fs.promises.rename(tmp, file);
  return file;
}

/**
 * The same policy as an OCI `linux.seccomp` section (runsc `--oci-seccomp`). Without the clone3
 * rule: runsc 20221219 answers a rule's errno as EPERM whatever `errnoRet` says, and glibc's
 * pthread_create falls back to clone only on ENOSYS (Node could not start a thread); gVisor of
 * that release has no clone3 at all, so it answers ENOSYS itself.
 */
export function ociSeccomp(): Record<string, unknown> {
  return {
    defaultAction: 'SCMP_ACT_ALLOW',
    architectures: ['SCMP_ARCH_X86_64'],
    syscalls: [
      { names: [...DENIED_SYSCALLS], action: 'SCMP_ACT_ERRNO', errnoRet: 1 },
      ...CLONE_NAMESPACE_FLAGS.map((flag) => ({
        names: ['clone'],
        action: 'SCMP_ACT_ERRNO',
        errnoRet: 1,
        args: [{ index: 0, value: flag, valueTwo: flag, op: 'SCMP_CMP_MASKED_EQ' }],
      })),
    ],
  };
}
