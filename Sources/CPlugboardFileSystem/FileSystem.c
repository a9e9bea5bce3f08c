#define _GNU_SOURCE
#include "CPlugboardFileSystem.h"

#include <errno.h>
#include <fcntl.h>
// openat2's argument and flag, from the kernel's header where the system has it (Linux
// headers 5.6 and later), else as the kernel defines them, so that the build never needs
// that header; a kernel without openat2 answers ENOSYS and reads take the blocking way.
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#else
#include <stdint.h>
struct open_how {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};
#endif
#ifndef RESOLVE_CACHED
#define RESOLVE_CACHED 0x20
#endif
#ifndef RESOLVE_NO_MAGICLINKS
#define RESOLVE_NO_MAGICLINKS 0x02
#endif
#ifndef RESOLVE_NO_SYMLINKS
#define RESOLVE_NO_SYMLINKS 0x04
#endif
#ifndef RESOLVE_BENEATH
#define RESOLVE_BENEATH 0x08
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

int plugboard_openat_cached(int dirfd, const char *path, int flags) {
    struct open_how how = {0};
    how.flags = (unsigned long long)(unsigned int)flags;
    how.resolve = RESOLVE_CACHED;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

int plugboard_openat_beneath_cached(int dirfd, const char *path, int flags) {
    struct open_how how = {0};
    how.flags = (unsigned long long)(unsigned int)flags;
    how.resolve = RESOLVE_CACHED | RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

ssize_t plugboard_pread_cached(int fd, void *buffer, size_t count, off_t offset) {
    struct iovec one = { .iov_base = buffer, .iov_len = count };
    return preadv2(fd, &one, 1, offset, RWF_NOWAIT);
}
