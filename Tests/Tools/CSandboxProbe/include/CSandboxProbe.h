#ifndef CSANDBOX_PROBE_H
#define CSANDBOX_PROBE_H

// sandbox-probe's system calls that Glibc's Swift overlay does not expose (unshare, the
// variadic ptrace, clone with flags). Each returns 0 (or the call's result), or -1 with
// errno set.

/// unshare(CLONE_NEWUSER).
int sandbox_probe_unshare_user(void);
/// ptrace(PTRACE_ATTACH) of a child forked for it (then killed).
long sandbox_probe_ptrace_child(void);
/// A raw clone(CLONE_NEWUSER | SIGCHLD) whose child exits at once, reaped here.
int sandbox_probe_clone_new_user(void);

#endif
