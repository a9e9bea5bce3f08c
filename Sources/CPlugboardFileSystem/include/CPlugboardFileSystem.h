#ifndef CPLUGBOARD_FILE_SYSTEM_H
#define CPLUGBOARD_FILE_SYSTEM_H

#include <sys/types.h>

// Reads that never wait for the disk, for FileStorage's reads on the thread that asked:
// both fail with EAGAIN where a plain call would block, and the caller then does the
// plain call on a blocking thread. Glibc's Swift overlay exposes neither (openat2 has no
// glibc wrapper; preadv2 is declared only under _GNU_SOURCE).

/// openat2(dirfd, path, {flags, mode 0, RESOLVE_CACHED}): opens only when every
/// component of `path` is in the kernel's lookup cache, else fails with EAGAIN. `flags`
/// must not create or truncate. Returns the descriptor, or -1 with errno set (ENOSYS or
/// EINVAL on kernels before 5.12, which lack openat2 or RESOLVE_CACHED).
int plugboard_openat_cached(int dirfd, const char *path, int flags);

/// As plugboard_openat_cached, and `path` (several components) resolved only below
/// `dirfd` and through no symbolic link (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
/// RESOLVE_NO_MAGICLINKS): a link anywhere on the way fails with ELOOP, a way out of
/// `dirfd` with EXDEV. One call where a walk folder by folder would open and close each.
int plugboard_openat_beneath_cached(int dirfd, const char *path, int flags);

/// preadv2(fd, {buffer, count}, offset, RWF_NOWAIT): reads only what is in the page
/// cache when the kernel looks, never waiting for the disk; fails with EAGAIN when the
/// first byte is not there (having started reading it in), and may return fewer bytes
/// than asked when a later one is not. A page mincore showed absent may be there by then
/// (its read was in flight): docs/ARCHITECTURE.md, "The server core". Returns the count
/// read, or -1 with errno set (EOPNOTSUPP where the file system does not support it).
ssize_t plugboard_pread_cached(int fd, void *buffer, size_t count, off_t offset);

#endif
