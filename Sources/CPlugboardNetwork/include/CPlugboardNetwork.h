#ifndef CPLUGBOARD_NETWORK_H
#define CPLUGBOARD_NETWORK_H

#include <stddef.h>
#include <stdint.h>

// The Linux calls the server's event loops need and Glibc's Swift overlay does not
// expose: epoll, eventfd and accept4. epoll_event is a packed struct on x86_64, which
// Swift cannot lay out faithfully, so events cross this boundary as plain arrays.

/// epoll_create1(EPOLL_CLOEXEC). Returns the descriptor, or -1 with errno set.
int plugboard_epoll_create(void);

/// Readable, writable and hang-up interest, as the loop asks for them.
enum {
    PLUGBOARD_EPOLL_IN = 0x001,
    PLUGBOARD_EPOLL_OUT = 0x004,
    PLUGBOARD_EPOLL_ERR = 0x008,
    PLUGBOARD_EPOLL_HUP = 0x010,
    PLUGBOARD_EPOLL_RDHUP = 0x2000,
    /// Only one of the loops waiting on a shared listener is woken per connection.
    PLUGBOARD_EPOLL_EXCLUSIVE = 1u << 28,
};

/// epoll_ctl with EPOLL_CTL_ADD, _MOD or _DEL (1, 3, 2); `data` comes back with each event.
int plugboard_epoll_add(int epfd, int fd, uint32_t events, uint64_t data);
int plugboard_epoll_modify(int epfd, int fd, uint32_t events, uint64_t data);
int plugboard_epoll_delete(int epfd, int fd);

/// epoll_wait into two arrays of `capacity` entries: each ready descriptor's data and
/// its events. Returns how many are ready, 0 at the timeout, or -1 with errno set.
int plugboard_epoll_wait(int epfd, uint64_t *data, uint32_t *events, int capacity, int timeout_ms);

/// eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK): the loop's doorbell for work from other threads.
int plugboard_eventfd(void);

/// accept4(SOCK_CLOEXEC | SOCK_NONBLOCK): no spawned child inherits a client's socket.
/// Returns the descriptor, or -1 with errno set (EAGAIN when nobody is waiting).
int plugboard_accept(int listener);

/// Sets O_NONBLOCK on `fd`. Returns 0, or -1 with errno set.
int plugboard_set_nonblocking(int fd);

/// Raises RLIMIT_NOFILE's soft limit to its hard limit; returns the soft limit now in
/// force, or -1 with errno set.
long plugboard_raise_open_files_limit(void);

/// systemd's notification protocol (sd_notify(3)): sends `message` as one datagram to
/// `socket_name`, a path or, with a leading '@', an abstract socket name, from a new
/// AF_UNIX SOCK_DGRAM socket closed before returning. Returns 0, or -1 with errno set
/// (EINVAL for a name that is not a path, not abstract, or too long).
int plugboard_notify(const char *socket_name, const char *message, size_t length);

/// An AF_UNIX SOCK_DGRAM socket bound to `socket_name` (a path, or '@' and an abstract
/// name), close-on-exec: what tests bind to stand in for systemd. Returns the
/// descriptor, or -1 with errno set.
int plugboard_datagram_bind(const char *socket_name);

#endif
