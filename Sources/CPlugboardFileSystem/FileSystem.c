#define _GNU_SOURCE
#include "CPlugboardFileSystem.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

int plugboard_openat_cached(int dirfd, const char *path, int flags) {
#ifdef SYS_openat2
    struct open_how how = {0};
    how.flags = (unsigned long long)(unsigned int)flags;
    how.resolve = RESOLVE_CACHED;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
#else
    (void)dirfd; (void)path; (void)flags;
    errno = ENOSYS;
    return -1;
#endif
}

ssize_t plugboard_pread_cached(int fd, void *buffer, size_t count, off_t offset) {
    struct iovec one = { .iov_base = buffer, .iov_len = count };
    return preadv2(fd, &one, 1, offset, RWF_NOWAIT);
}
