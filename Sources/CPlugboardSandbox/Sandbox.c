#define _GNU_SOURCE
#include "CPlugboardSandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__x86_64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1
#endif

int plugboard_sandbox_no_new_privs(void) {
    return prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) == 0 ? 0 : -errno;
}

int plugboard_sandbox_drop_capabilities(void) {
    // EINVAL marks the first capability this kernel does not know; EPERM (no CAP_SETPCAP)
    // leaves the bounding set, which matters only to a later exec, and exec is refused.
    for (unsigned long cap = 0; cap < 64; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0UL, 0UL, 0UL) != 0 && errno == EINVAL) break;
    }
    (void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0UL, 0UL, 0UL);
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    memset(data, 0, sizeof data);
    return syscall(SYS_capset, &header, data) == 0 ? 0 : -errno;
}

// MARK: descriptors

static int is_kept(int fd, const int *keep, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (keep[i] == fd) return 1;
    }
    return 0;
}

// The kernels before 5.9 have no close_range: one close per open descriptor, read from
// /proc/self/fd in rounds (closing while reading the folder would skip entries).
static int close_listed(const int *keep, size_t count) {
    for (;;) {
        DIR *dir = opendir("/proc/self/fd");
        if (!dir) return -errno;
        int own = dirfd(dir);
        int found[1024];
        size_t n = 0;
        struct dirent *entry;
        while (n < sizeof found / sizeof found[0] && (entry = readdir(dir))) {
            if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
            int fd = atoi(entry->d_name);
            if (fd != own && !is_kept(fd, keep, count)) found[n++] = fd;
        }
        closedir(dir);
        if (n == 0) return 0;
        for (size_t i = 0; i < n; i++) close(found[i]);
    }
}

int plugboard_sandbox_close_descriptors_except(const int *keep, size_t count) {
    int sorted[256];
    if (count > sizeof sorted / sizeof sorted[0]) return -E2BIG;
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        if (keep[i] < 0) return -EBADF;
        size_t at = n;
        while (at > 0 && sorted[at - 1] > keep[i]) at--;
        if (at > 0 && sorted[at - 1] == keep[i]) continue;
        memmove(&sorted[at + 1], &sorted[at], (n - at) * sizeof sorted[0]);
        sorted[at] = keep[i];
        n++;
    }
    unsigned int first = 0;
    for (size_t i = 0; i <= n; i++) {
        unsigned int last = i < n ? (unsigned int)sorted[i] - 1 : ~0U;
        if (i < n && (unsigned int)sorted[i] == first) {
            first++;
            continue;
        }
        if (syscall(SYS_close_range, first, last, 0U) != 0) {
            if (errno == ENOSYS) return close_listed(keep, count);
            return -errno;
        }
        if (i < n) first = (unsigned int)sorted[i] + 1;
    }
    return 0;
}

// MARK: limits

static int resource_of(int resource) {
    switch (resource) {
    case PLUGBOARD_SANDBOX_LIMIT_DATA: return RLIMIT_DATA;
    case PLUGBOARD_SANDBOX_LIMIT_ADDRESS_SPACE: return RLIMIT_AS;
    case PLUGBOARD_SANDBOX_LIMIT_OPEN_FILES: return RLIMIT_NOFILE;
    case PLUGBOARD_SANDBOX_LIMIT_CORE: return RLIMIT_CORE;
    default: return -1;
    }
}

int plugboard_sandbox_set_limit(int resource, uint64_t value) {
    int r = resource_of(resource);
    if (r < 0) return -EINVAL;
    struct rlimit limit = {(rlim_t)value, (rlim_t)value};
    return setrlimit(r, &limit) == 0 ? 0 : -errno;
}

uint64_t plugboard_sandbox_get_limit(int resource, int hard) {
    int r = resource_of(resource);
    struct rlimit limit;
    if (r < 0 || getrlimit(r, &limit) != 0) return UINT64_MAX;
    rlim_t value = hard ? limit.rlim_max : limit.rlim_cur;
    return value == RLIM_INFINITY ? UINT64_MAX : (uint64_t)value;
}

// MARK: the refused system calls

struct refused { long number; const char *name; };

// Trapped into the SIGSYS handler (answered EPERM and reported). clone with namespace
// flags is refused by the filter's clone rule, personality by its own rule; both are
// named here for the report.
static const struct refused refused_calls[] = {
#ifdef __NR_execve
    {__NR_execve, "execve"},
#endif
#ifdef __NR_execveat
    {__NR_execveat, "execveat"},
#endif
#ifdef __NR_ptrace
    {__NR_ptrace, "ptrace"},
#endif
#ifdef __NR_process_vm_readv
    {__NR_process_vm_readv, "process_vm_readv"},
#endif
#ifdef __NR_process_vm_writev
    {__NR_process_vm_writev, "process_vm_writev"},
#endif
#ifdef __NR_process_madvise
    {__NR_process_madvise, "process_madvise"},
#endif
#ifdef __NR_pidfd_getfd
    {__NR_pidfd_getfd, "pidfd_getfd"},
#endif
#ifdef __NR_kcmp
    {__NR_kcmp, "kcmp"},
#endif
#ifdef __NR_mount
    {__NR_mount, "mount"},
#endif
#ifdef __NR_umount2
    {__NR_umount2, "umount2"},
#endif
#ifdef __NR_pivot_root
    {__NR_pivot_root, "pivot_root"},
#endif
#ifdef __NR_chroot
    {__NR_chroot, "chroot"},
#endif
#ifdef __NR_fsopen
    {__NR_fsopen, "fsopen"},
#endif
#ifdef __NR_fsconfig
    {__NR_fsconfig, "fsconfig"},
#endif
#ifdef __NR_fsmount
    {__NR_fsmount, "fsmount"},
#endif
#ifdef __NR_fspick
    {__NR_fspick, "fspick"},
#endif
#ifdef __NR_move_mount
    {__NR_move_mount, "move_mount"},
#endif
#ifdef __NR_open_tree
    {__NR_open_tree, "open_tree"},
#endif
#ifdef __NR_mount_setattr
    {__NR_mount_setattr, "mount_setattr"},
#endif
#ifdef __NR_kexec_load
    {__NR_kexec_load, "kexec_load"},
#endif
#ifdef __NR_kexec_file_load
    {__NR_kexec_file_load, "kexec_file_load"},
#endif
#ifdef __NR_init_module
    {__NR_init_module, "init_module"},
#endif
#ifdef __NR_finit_module
    {__NR_finit_module, "finit_module"},
#endif
#ifdef __NR_delete_module
    {__NR_delete_module, "delete_module"},
#endif
#ifdef __NR_create_module
    {__NR_create_module, "create_module"},
#endif
#ifdef __NR_get_kernel_syms
    {__NR_get_kernel_syms, "get_kernel_syms"},
#endif
#ifdef __NR_query_module
    {__NR_query_module, "query_module"},
#endif
#ifdef __NR_bpf
    {__NR_bpf, "bpf"},
#endif
#ifdef __NR_unshare
    {__NR_unshare, "unshare"},
#endif
#ifdef __NR_setns
    {__NR_setns, "setns"},
#endif
#ifdef __NR_keyctl
    {__NR_keyctl, "keyctl"},
#endif
#ifdef __NR_add_key
    {__NR_add_key, "add_key"},
#endif
#ifdef __NR_request_key
    {__NR_request_key, "request_key"},
#endif
#ifdef __NR_perf_event_open
    {__NR_perf_event_open, "perf_event_open"},
#endif
#ifdef __NR_userfaultfd
    {__NR_userfaultfd, "userfaultfd"},
#endif
#ifdef __NR_reboot
    {__NR_reboot, "reboot"},
#endif
#ifdef __NR_swapon
    {__NR_swapon, "swapon"},
#endif
#ifdef __NR_swapoff
    {__NR_swapoff, "swapoff"},
#endif
#ifdef __NR_acct
    {__NR_acct, "acct"},
#endif
#ifdef __NR_quotactl
    {__NR_quotactl, "quotactl"},
#endif
#ifdef __NR_quotactl_fd
    {__NR_quotactl_fd, "quotactl_fd"},
#endif
#ifdef __NR_open_by_handle_at
    {__NR_open_by_handle_at, "open_by_handle_at"},
#endif
#ifdef __NR_lookup_dcookie
    {__NR_lookup_dcookie, "lookup_dcookie"},
#endif
#ifdef __NR_nfsservctl
    {__NR_nfsservctl, "nfsservctl"},
#endif
#ifdef __NR_uselib
    {__NR_uselib, "uselib"},
#endif
#ifdef __NR__sysctl
    {__NR__sysctl, "_sysctl"},
#endif
#ifdef __NR_io_uring_setup
    {__NR_io_uring_setup, "io_uring_setup"},
#endif
#ifdef __NR_io_uring_enter
    {__NR_io_uring_enter, "io_uring_enter"},
#endif
#ifdef __NR_io_uring_register
    {__NR_io_uring_register, "io_uring_register"},
#endif
#ifdef __NR_iopl
    {__NR_iopl, "iopl"},
#endif
#ifdef __NR_ioperm
    {__NR_ioperm, "ioperm"},
#endif
#ifdef __NR_modify_ldt
    {__NR_modify_ldt, "modify_ldt"},
#endif
#ifdef __NR_vm86
    {__NR_vm86, "vm86"},
#endif
#ifdef __NR_vm86old
    {__NR_vm86old, "vm86old"},
#endif
#ifdef __NR_settimeofday
    {__NR_settimeofday, "settimeofday"},
#endif
#ifdef __NR_clock_settime
    {__NR_clock_settime, "clock_settime"},
#endif
#ifdef __NR_clock_adjtime
    {__NR_clock_adjtime, "clock_adjtime"},
#endif
#ifdef __NR_sethostname
    {__NR_sethostname, "sethostname"},
#endif
#ifdef __NR_setdomainname
    {__NR_setdomainname, "setdomainname"},
#endif
#ifdef __NR_syslog
    {__NR_syslog, "syslog"},
#endif
#ifdef __NR_vhangup
    {__NR_vhangup, "vhangup"},
#endif
};

static const size_t refused_count = sizeof refused_calls / sizeof refused_calls[0];

const char *plugboard_sandbox_refused_syscall_name(long number) {
    for (size_t i = 0; i < refused_count; i++) {
        if (refused_calls[i].number == number) return refused_calls[i].name;
    }
    if (number == __NR_clone) return "clone";
    if (number == __NR_personality) return "personality";
    return NULL;
}

// MARK: the SIGSYS handler

static volatile int report_descriptor = -1;

static size_t append(char *line, size_t at, size_t size, const char *text) {
    while (*text && at < size) line[at++] = *text++;
    return at;
}

static size_t append_number(char *line, size_t at, size_t size, unsigned long value) {
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value && n < sizeof digits);
    while (n && at < size) line[at++] = digits[--n];
    return at;
}

// Async-signal-safe only: no allocation, no locks, no stdio. errno is the interrupted
// code's and is kept.
static void on_sigsys(int signal, siginfo_t *info, void *context) {
    (void)signal;
    // A SIGSYS sent with kill() has no system call to answer: changing the return
    // register would corrupt whatever the thread was computing.
    if (info->si_code != SYS_SECCOMP) return;
    int saved = errno;
    char line[128];
    size_t n = 0;
    const char *name = plugboard_sandbox_refused_syscall_name(info->si_syscall);
    n = append(line, n, sizeof line, "sandbox refused system call ");
    n = append(line, n, sizeof line, name ? name : "number");
    n = append(line, n, sizeof line, " (");
    n = append_number(line, n, sizeof line, (unsigned long)info->si_syscall);
    n = append(line, n, sizeof line, ")\n");
    int fd = report_descriptor;
    if (fd >= 0) {
        // send with MSG_NOSIGNAL where the report goes to a socket, so that a closed
        // reader does not add a SIGPIPE; a pipe takes write.
        ssize_t sent = send(fd, line, n, MSG_NOSIGNAL);
        if (sent < 0 && errno == ENOTSOCK) sent = write(fd, line, n);
        (void)sent;
    }
    ucontext_t *uc = (ucontext_t *)context;
#if defined(__x86_64__)
    uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
    uc->uc_mcontext.regs[0] = (unsigned long long)(long long)-EPERM;
#else
    (void)uc;
#endif
    errno = saved;
}

int plugboard_sandbox_install_sigsys_handler(int report_fd) {
    report_descriptor = report_fd;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigsys;
    action.sa_flags = SA_SIGINFO;
    sigfillset(&action.sa_mask);
    if (sigaction(SIGSYS, &action, NULL) != 0) return -errno;
    // A SIGSYS blocked when a call traps would make the kernel kill the process instead;
    // unblock it on this thread (new threads inherit the mask).
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGSYS);
    return pthread_sigmask(SIG_UNBLOCK, &set, NULL) == 0 ? 0 : -EINVAL;
}

// MARK: the seccomp filter

int plugboard_sandbox_seccomp_architecture_supported(void) {
#ifdef SANDBOX_AUDIT_ARCH
    return 1;
#else
    return 0;
#endif
}

#ifdef SANDBOX_AUDIT_ARCH

// The namespace flags of clone(2): a thread or a plain fork passes none of them.
// CLONE_NEWTIME (0x80) is left out: in clone's first argument that bit belongs to the
// exit signal, and clone cannot ask for a time namespace (only clone3 and unshare can).
#define NAMESPACE_FLAGS (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | \
                         CLONE_NEWPID | CLONE_NEWNET)

#define ARG_LOW(i) (offsetof(struct seccomp_data, args) + (i) * sizeof(uint64_t))
#define ARG_HIGH(i) (ARG_LOW(i) + sizeof(uint32_t))

enum label { ALLOW, TRAP, NO_CLONE3, CLONE_RULE, SIGACTION_RULE, PERSONALITY_RULE, LABELS };

struct program {
    struct sock_filter code[256];
    unsigned short count;
    int fixups[256];      // for each instruction: the label its true branch goes to, or -1
    int labels[LABELS];
    int overflow;
};

static void emit(struct program *p, struct sock_filter insn, int to) {
    if (p->count >= sizeof p->code / sizeof p->code[0]) {
        p->overflow = 1;
        return;
    }
    p->fixups[p->count] = to;
    p->code[p->count++] = insn;
}

static void here(struct program *p, enum label label) { p->labels[label] = p->count; }

// if (A == value) goto label (forward only); else fall through.
static void jump_if(struct program *p, uint32_t value, enum label label) {
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 0), label);
}

static void load(struct program *p, uint32_t offset) {
    emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset), -1);
}

static void ret(struct program *p, uint32_t action) {
    emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action), -1);
}

static int resolve(struct program *p) {
    if (p->overflow) return -E2BIG;
    for (unsigned short i = 0; i < p->count; i++) {
        if (p->fixups[i] < 0) continue;
        int distance = p->labels[p->fixups[i]] - (i + 1);
        if (distance < 0 || distance > 255) return -E2BIG;
        p->code[i].jt = (unsigned char)distance;
    }
    return 0;
}

static int build(struct program *p) {
    memset(p, 0, sizeof *p);
    // A system call of another architecture (int 0x80 on x86_64) has other numbers:
    // nothing below would mean what it says.
    load(p, offsetof(struct seccomp_data, arch));
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_AUDIT_ARCH, 1, 0), -1);
    ret(p, SECCOMP_RET_KILL_PROCESS);
    load(p, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    // The x32 ABI's numbers (bit 30 set) reach the same kernel code under other numbers.
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 0, 0), TRAP);
#endif
    jump_if(p, __NR_clone3, NO_CLONE3);
    jump_if(p, __NR_clone, CLONE_RULE);
    jump_if(p, __NR_rt_sigaction, SIGACTION_RULE);
    jump_if(p, __NR_personality, PERSONALITY_RULE);
    for (size_t i = 0; i < refused_count; i++) jump_if(p, (uint32_t)refused_calls[i].number, TRAP);
    here(p, ALLOW);
    ret(p, SECCOMP_RET_ALLOW);
    here(p, TRAP);
    ret(p, SECCOMP_RET_TRAP);
    // glibc's pthread_create and fork try clone3 first and fall back to clone on ENOSYS;
    // clone3's flags sit in memory, which a filter cannot read, so clone3 is refused whole.
    here(p, NO_CLONE3);
    ret(p, SECCOMP_RET_ERRNO | ENOSYS);
    here(p, CLONE_RULE);
    load(p, ARG_LOW(0));
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NAMESPACE_FLAGS, 0, 1), -1);
    ret(p, SECCOMP_RET_TRAP);
    ret(p, SECCOMP_RET_ALLOW);
    // A plugin that replaces the SIGSYS handler would turn each refusal into a call that
    // returns its own number as if it succeeded: such a process is killed instead.
    here(p, SIGACTION_RULE);
    load(p, ARG_LOW(0));
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SIGSYS, 1, 0), -1);
    ret(p, SECCOMP_RET_ALLOW);
    load(p, ARG_LOW(1));
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), -1);
    ret(p, SECCOMP_RET_KILL_PROCESS);
    load(p, ARG_HIGH(1));
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), -1);
    ret(p, SECCOMP_RET_KILL_PROCESS);
    ret(p, SECCOMP_RET_ALLOW);
    // Only the query (0xffffffff) and plain Linux (0): the other personalities change how
    // the kernel lays out and reads the process (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE).
    here(p, PERSONALITY_RULE);
    load(p, ARG_LOW(0));
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffU, 2, 0), -1);
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), -1);
    ret(p, SECCOMP_RET_TRAP);
    ret(p, SECCOMP_RET_ALLOW);
    return resolve(p);
}

#endif

int plugboard_sandbox_install_seccomp(void) {
#ifdef SANDBOX_AUDIT_ARCH
    static struct program program;
    int built = build(&program);
    if (built != 0) return built;
    struct sock_fprog fprog = {program.count, program.code};
    // TSYNC: the threads that already run get the filter too (and no_new_privs with it).
    long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog);
    if (r == 0) return 0;
    // With TSYNC a positive result is the id of a thread that could not be synchronized.
    return r > 0 ? -EAGAIN : -errno;
#else
    return PLUGBOARD_SANDBOX_UNSUPPORTED_ARCH;
#endif
}

// MARK: Landlock

// The Linux 6.1 headers stop at ABI 2; the later access rights and the attribute's later
// fields are written out here (include/uapi/linux/landlock.h).
#define ACCESS_FS_TRUNCATE (1ULL << 14)
#define ACCESS_FS_IOCTL_DEV (1ULL << 15)
#define SCOPE_SIGNAL (1ULL << 1)

struct ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;   // ABI 4
    uint64_t scoped;               // ABI 6
};

struct plugboard_sandbox_landlock {
    int fd;
    uint64_t handled;
};

#define ACCESS_FILE (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | \
                     ACCESS_FS_TRUNCATE | ACCESS_FS_IOCTL_DEV)
#define ACCESS_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

int plugboard_sandbox_landlock_abi(void) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi > 0 ? (int)abi : -errno;
}

plugboard_sandbox_landlock *plugboard_sandbox_landlock_begin(int abi) {
    if (abi < 1) {
        errno = EINVAL;
        return NULL;
    }
    struct ruleset_attr attr = {0, 0, 0};
    attr.handled_access_fs = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;
    if (abi >= 2) attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) attr.handled_access_fs |= ACCESS_FS_TRUNCATE;
    if (abi >= 5) attr.handled_access_fs |= ACCESS_FS_IOCTL_DEV;
    // Signals only to processes in the same domain: the plugin cannot signal the host.
    if (abi >= 6) attr.scoped = SCOPE_SIGNAL;
    size_t size = abi >= 6 ? sizeof attr : abi >= 4 ? offsetof(struct ruleset_attr, scoped)
                                                    : offsetof(struct ruleset_attr, handled_access_net);
    plugboard_sandbox_landlock *ruleset = malloc(sizeof *ruleset);
    if (!ruleset) return NULL;
    long fd = syscall(SYS_landlock_create_ruleset, &attr, size, 0U);
    if (fd < 0) {
        int saved = errno;
        free(ruleset);
        errno = saved;
        return NULL;
    }
    ruleset->fd = (int)fd;
    ruleset->handled = attr.handled_access_fs;
    return ruleset;
}

int plugboard_sandbox_landlock_allow(plugboard_sandbox_landlock *ruleset, const char *path, int writable) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        return -saved;
    }
    uint64_t access = (writable ? ruleset->handled : ACCESS_READ) & ruleset->handled;
    // The kernel refuses folder rights (READ_DIR, MAKE_*...) on a rule for a file.
    if (!S_ISDIR(st.st_mode)) access &= ACCESS_FILE;
    struct landlock_path_beneath_attr rule = {.allowed_access = access, .parent_fd = fd};
    long r = syscall(SYS_landlock_add_rule, ruleset->fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0U);
    int saved = errno;
    close(fd);
    return r == 0 ? 0 : -saved;
}

int plugboard_sandbox_landlock_commit(plugboard_sandbox_landlock *ruleset) {
    long r = syscall(SYS_landlock_restrict_self, ruleset->fd, 0U);
    int saved = errno;
    plugboard_sandbox_landlock_discard(ruleset);
    return r == 0 ? 0 : -saved;
}

void plugboard_sandbox_landlock_discard(plugboard_sandbox_landlock *ruleset) {
    if (!ruleset) return;
    close(ruleset->fd);
    free(ruleset);
}

// MARK: looking at the process

int plugboard_sandbox_thread_count(void) {
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return -errno;
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir))) {
        if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9') count++;
    }
    closedir(dir);
    return count;
}

struct library_search {
    const char *name;
    char *out;
    size_t size;
    long length;
};

static int match_library(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct library_search *s = data;
    const char *path = info->dlpi_name;
    if (!path || path[0] != '/') return 0;
    const char *slash = strrchr(path, '/');
    if (strcmp(slash + 1, s->name) != 0) return 0;
    size_t length = strlen(path);
    if (length + 1 > s->size) return 1;
    memcpy(s->out, path, length + 1);
    s->length = (long)length;
    return 1;
}

long plugboard_sandbox_loaded_library_path(const char *name, char *out, size_t size) {
    struct library_search s = {name, out, size, -1};
    dl_iterate_phdr(match_library, &s);
    return s.length;
}
