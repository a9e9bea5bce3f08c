#define _GNU_SOURCE
#include "CPlugboardNetwork.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int plugboard_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static int control(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event = {.events = events, .data = {.u64 = data}};
    return epoll_ctl(epfd, op, fd, &event);
}

int plugboard_epoll_add(int epfd, int fd, uint32_t events, uint64_t data) {
    return control(epfd, EPOLL_CTL_ADD, fd, events, data);
}

int plugboard_epoll_modify(int epfd, int fd, uint32_t events, uint64_t data) {
    return control(epfd, EPOLL_CTL_MOD, fd, events, data);
}

int plugboard_epoll_delete(int epfd, int fd) {
    // Kernels before 2.6.9 want a non-null event even for DEL.
    struct epoll_event unused = {0};
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &unused);
}

int plugboard_epoll_wait(int epfd, uint64_t *data, uint32_t *events, int capacity, int timeout_ms) {
    struct epoll_event ready[256];
    if (capacity > 256) capacity = 256;
    int n = epoll_wait(epfd, ready, capacity, timeout_ms);
    for (int i = 0; i < n; i++) {
        data[i] = ready[i].data.u64;
        events[i] = ready[i].events;
    }
    return n;
}

int plugboard_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

int plugboard_accept(int listener) { return accept4(listener, 0, 0, SOCK_CLOEXEC | SOCK_NONBLOCK); }

int plugboard_set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return -1;
    return fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

long plugboard_raise_open_files_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    }
    return (long)limit.rlim_cur;
}

// sun_path of `name`, and the address length: a path counts its NUL; an abstract name
// ('@' becomes the leading NUL) counts exactly its bytes, as systemd reads it.
static int unix_address(const char *name, struct sockaddr_un *address, socklen_t *length) {
    size_t n = name ? strlen(name) : 0;
    if (n < 2 || (name[0] != '/' && name[0] != '@') || n >= sizeof(address->sun_path)) {
        errno = EINVAL;
        return -1;
    }
    memset(address, 0, sizeof(*address));
    address->sun_family = AF_UNIX;
    memcpy(address->sun_path, name, n);
    if (name[0] == '@') {
        address->sun_path[0] = 0;
        *length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    } else {
        *length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    }
    return 0;
}

int plugboard_notify(const char *socket_name, const char *message, size_t length) {
    struct sockaddr_un address;
    socklen_t address_length;
    if (unix_address(socket_name, &address, &address_length) < 0) return -1;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    ssize_t sent;
    do {
        sent = sendto(fd, message, length, MSG_NOSIGNAL, (const struct sockaddr *)&address, address_length);
    } while (sent < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    errno = saved;
    return sent < 0 ? -1 : 0;
}

int plugboard_datagram_bind(const char *socket_name) {
    struct sockaddr_un address;
    socklen_t address_length;
    if (unix_address(socket_name, &address, &address_length) < 0) return -1;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (bind(fd, (const struct sockaddr *)&address, address_length) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}
