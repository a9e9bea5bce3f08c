#define _GNU_SOURCE
#include "CSandboxProbe.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int sandbox_probe_unshare_user(void) { return unshare(CLONE_NEWUSER); }

long sandbox_probe_ptrace_child(void) {
    // Its own child, so that a ptrace that goes through stops nothing else.
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        pause();
        _exit(0);
    }
    long r = ptrace(PTRACE_ATTACH, child, 0, 0);
    int saved = errno;
    kill(child, SIGKILL);
    int status;
    waitpid(child, &status, 0);
    errno = saved;
    return r;
}

int sandbox_probe_clone_new_user(void) {
    // Raw, so that glibc's clone3 attempt does not hide the clone rule (clone3 answers ENOSYS).
    long pid = syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), 0, 0, 0, 0);
    if (pid < 0) return -1;
    if (pid == 0) _exit(0);
    int status;
    waitpid((pid_t)pid, &status, 0);
    return 0;
}
