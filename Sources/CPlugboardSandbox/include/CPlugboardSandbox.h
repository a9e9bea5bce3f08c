#ifndef CPLUGBOARD_SANDBOX_H
#define CPLUGBOARD_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

// The sandbox an isolated plugin's worker child applies to itself before it maps the
// plugin (docs/SECURITY.md, "The isolated plugin's sandbox"). Each step is one call, so
// that the Swift side (Sandbox.apply) decides the order and reports each step's failure;
// every function returns 0 on success or a negative errno value, unless it says otherwise.
// No libseccomp: the BPF program is built here from the kernel's headers.

/// prctl(PR_SET_NO_NEW_PRIVS, 1): no exec may grant privileges again (setuid bits, file
/// capabilities); also what lets an unprivileged process install a seccomp filter.
int plugboard_sandbox_no_new_privs(void);

/// Empties the capability sets (effective, permitted, inheritable, ambient) and, where
/// the process may (CAP_SETPCAP), the bounding set: a worker started as root keeps its user
/// ID but not root's powers (CAP_SYS_PTRACE over other processes' /proc entries,
/// CAP_DAC_OVERRIDE, CAP_NET_RAW...).
int plugboard_sandbox_drop_capabilities(void);

/// Closes every descriptor but those in `keep` (any order, duplicates allowed): with
/// close_range over the gaps where the kernel has it, else one close per entry of
/// /proc/self/fd.
int plugboard_sandbox_close_descriptors_except(const int *keep, size_t count);

/// setrlimit(resource, {value, value}) for RLIMIT_DATA, RLIMIT_AS, RLIMIT_NOFILE or
/// RLIMIT_CORE (the Swift overlay's resource constants are not plain integers).
/// `resource` is one of the PLUGBOARD_SANDBOX_LIMIT_* values.
int plugboard_sandbox_set_limit(int resource, uint64_t value);
/// getrlimit's soft limit, or with `hard` its hard limit; UINT64_MAX for unlimited or on
/// failure.
uint64_t plugboard_sandbox_get_limit(int resource, int hard);

enum {
    PLUGBOARD_SANDBOX_LIMIT_DATA = 0,
    PLUGBOARD_SANDBOX_LIMIT_ADDRESS_SPACE = 1,
    PLUGBOARD_SANDBOX_LIMIT_OPEN_FILES = 2,
    PLUGBOARD_SANDBOX_LIMIT_CORE = 3,
};

/// Installs the SIGSYS handler that answers a refused system call: it writes one line,
/// `sandbox refused system call NAME (NUMBER)`, to `report_fd` and makes the call fail
/// with EPERM. Install it before the filter. Async-signal-safe; idempotent.
int plugboard_sandbox_install_sigsys_handler(int report_fd);

/// Installs the seccomp filter on every thread of the process (SECCOMP_FILTER_FLAG_TSYNC):
/// the refused calls trap into the SIGSYS handler, clone3 answers ENOSYS (glibc then uses
/// clone), a foreign system-call architecture and a replacement of the SIGSYS handler kill
/// the process; everything else is allowed. Needs no_new_privs first. Returns
/// PLUGBOARD_SANDBOX_UNSUPPORTED_ARCH on an architecture it has no table for.
int plugboard_sandbox_install_seccomp(void);

/// Whether this build knows the running architecture's system calls (x86_64, aarch64).
int plugboard_sandbox_seccomp_architecture_supported(void);

/// Returned by install_seccomp when the architecture is not x86_64 or aarch64.
#define PLUGBOARD_SANDBOX_UNSUPPORTED_ARCH (-100000)

/// The name of system call `number` as the SIGSYS report writes it, or NULL when the
/// filter does not refuse it (a test's and a report's look-up).
const char *plugboard_sandbox_refused_syscall_name(long number);

/// The kernel's Landlock ABI version (1, 2, ...), or a negative errno value: -ENOSYS when
/// the kernel has no Landlock, -EOPNOTSUPP when it is built in but disabled at boot.
int plugboard_sandbox_landlock_abi(void);

/// A Landlock ruleset being built. Opaque outside this file.
typedef struct plugboard_sandbox_landlock plugboard_sandbox_landlock;

/// Starts a ruleset that handles every file-system access the ABI `abi` knows (network
/// left open) and, from ABI 6, scopes signals to the sandboxed processes. Returns NULL with
/// errno set on failure.
plugboard_sandbox_landlock *plugboard_sandbox_landlock_begin(int abi);

/// Grants `path` and everything beneath it: reading (files and folders), or with
/// `writable` every file-system access. A path to a file gets the file rights only.
/// Returns 0, -ENOENT (and the other lookup errors) when the path cannot be opened: the
/// caller notes it and goes on.
int plugboard_sandbox_landlock_allow(plugboard_sandbox_landlock *ruleset, const char *path, int writable);

/// Restricts the calling thread, and every thread and process it starts afterwards, to
/// the ruleset, and frees it (also on failure). Landlock binds only the calling thread:
/// call it while it is the process's only thread.
int plugboard_sandbox_landlock_commit(plugboard_sandbox_landlock *ruleset);

/// Frees a ruleset that will not be committed.
void plugboard_sandbox_landlock_discard(plugboard_sandbox_landlock *ruleset);

/// The number of threads in this process (/proc/self/task), or a negative errno value.
int plugboard_sandbox_thread_count(void);

/// Copies the absolute path of the loaded shared object whose file name is `name` (such
/// as "libswiftCore.so") into `out`. Returns its length, or -1 when none is loaded or
/// `out` is too small.
long plugboard_sandbox_loaded_library_path(const char *name, char *out, size_t size);

#endif
