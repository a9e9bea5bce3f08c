#define _GNU_SOURCE
#include "CPlugboardIPC.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

int plugboard_ipc_socketpair(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds);
}

ssize_t plugboard_ipc_send(int socket, const void *head, size_t head_length, const void *body, size_t body_length,
                           int pass_fd) {
    struct iovec parts[2] = {{(void *)head, head_length}, {(void *)body, body_length}};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = parts;
    message.msg_iovlen = body_length > 0 ? 2 : 1;
    union {
        char bytes[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    if (pass_fd >= 0) {
        memset(&control, 0, sizeof control);
        message.msg_control = control.bytes;
        message.msg_controllen = sizeof control.bytes;
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(header), &pass_fd, sizeof(int));
    }
    ssize_t sent;
    do {
        sent = sendmsg(socket, &message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    return sent;
}

ssize_t plugboard_ipc_receive(int socket, void *buffer, size_t capacity, int *received_fd) {
    return plugboard_ipc_receive_flags(socket, buffer, capacity, received_fd, 0);
}

ssize_t plugboard_ipc_receive_flags(int socket, void *buffer, size_t capacity, int *received_fd, int flags) {
    *received_fd = -1;
    struct iovec part = {buffer, capacity};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    union {
        char bytes[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } control;
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    ssize_t got;
    do {
        got = recvmsg(socket, &message, MSG_CMSG_CLOEXEC | flags);
    } while (got < 0 && errno == EINTR);
    if (got < 0) return -1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int fds[4];
        memcpy(fds, CMSG_DATA(header), count * sizeof(int));
        for (size_t i = 0; i < count; i++) {
            // One descriptor a frame: any more the peer attached are closed, never leaked.
            if (*received_fd < 0) *received_fd = fds[i]; else close(fds[i]);
        }
    }
    if (message.msg_flags & MSG_TRUNC) {
        if (*received_fd >= 0) { close(*received_fd); *received_fd = -1; }
        errno = EMSGSIZE;
        return -1;
    }
    return got;
}

int plugboard_ipc_hung_up(int socket) {
    struct pollfd entry = {socket, POLLRDHUP, 0};
    int ready;
    do {
        ready = poll(&entry, 1, 0);
    } while (ready < 0 && errno == EINTR);
    return ready > 0 && (entry.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) ? 1 : 0;
}

int plugboard_ipc_memfd(const char *name, size_t size) {
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    if (ftruncate(fd, (off_t)size) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

void *plugboard_ipc_map(int fd, size_t size) {
    void *at = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return at == MAP_FAILED ? NULL : at;
}

int plugboard_ipc_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns) {
    struct timespec bound = {(time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000)};
    long rc = syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout_ns >= 0 ? &bound : NULL, NULL, 0);
    if (rc == 0) return 0;
    if (errno == ETIMEDOUT) return 1;
    if (errno == EAGAIN || errno == EINTR) return 0;
    return -1;
}

void plugboard_ipc_futex_wake(uint32_t *word, int count) {
    syscall(SYS_futex, word, FUTEX_WAKE, count, NULL, NULL, 0);
}

int plugboard_ipc_current_cpu(void) { return sched_getcpu(); }
