// A close(2) that reports a descriptor closed twice. Preloaded into the test run by
// .ci/run (LD_PRELOAD), it writes one report per close that fails with EBADF, with a
// backtrace, to CLOSE_AUDIT_DIR/<pid>, in the test process and the plugboard processes
// the tests start (other programs, shells and Python, are not ours and are let be).
//
// Why it matters: descriptor numbers are reused at once, lowest first, so the second
// close of a number usually closes another thread's descriptor (a socket, a FileStorage
// folder) rather than failing; the EBADF this catches is the lucky case of the same bug.
// A class whose throwing initializer has set every property is deinitialized, so an
// initializer that closes on failure and a deinit that closes too is the usual cause.
//
// Symbolize a report's frames with:
//     addr2line -f -e <binary> <offset> | swift demangle --simplified
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int audited(void) {
    static int decided = -1;
    if (decided >= 0) return decided;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return decided = 0;
    exe[n] = 0;
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    return decided = (strstr(base, ".xctest") != NULL || strcmp(base, "plugboard") == 0);
}

int close(int fd) {
    long result = syscall(SYS_close, fd);
    if (result == -1 && errno == EBADF && fd >= 0 && audited()) {
        int saved = errno;
        const char *dir = getenv("CLOSE_AUDIT_DIR");
        if (dir != NULL) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%d", dir, (int)getpid());
            int log = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            if (log >= 0) {
                char head[96];
                int length = snprintf(head, sizeof head, "close(%d) failed with EBADF: closed twice\n", fd);
                (void)!write(log, head, (size_t)length);
                void *frames[48];
                backtrace_symbols_fd(frames, backtrace(frames, 48), log);
                (void)!write(log, "\n", 1);
                syscall(SYS_close, log);
            }
        }
        errno = saved;
    }
    return (int)result;
}
