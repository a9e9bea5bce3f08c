#define _GNU_SOURCE
#include "CPlugboardNetwork.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>

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
