#ifndef CPLUGBOARD_IPC_H
#define CPLUGBOARD_IPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

// What a worker's wire needs that Swift's Glibc overlay cannot express: the control
// message that carries a descriptor (CMSG_* are macros), socketpair with its flags, and
// for the ring transport memfd_create, futexes (syscall is variadic) and atomics on
// shared memory (Swift's Atomic cannot sit at an address in a mapping).

/// socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC): one message per frame, a frame's
/// descriptor travels with exactly that message. Returns 0, or -1 with errno set.
int plugboard_ipc_socketpair(int fds[2]);

/// Sends one message made of `head` then `body` (either may be empty), with `pass_fd`
/// attached when it is 0 or more. Retries EINTR; returns the bytes sent or -1 (errno).
ssize_t plugboard_ipc_send(int socket, const void *head, size_t head_length, const void *body, size_t body_length,
                           int pass_fd);

/// Receives one message into `buffer`; a descriptor that came with it is stored in
/// `*received_fd` (else -1; it is close-on-exec). Returns the message's length, 0 at the
/// peer's end, or -1 (errno; EMSGSIZE when the message did not fit).
ssize_t plugboard_ipc_receive(int socket, void *buffer, size_t capacity, int *received_fd);

/// ``plugboard_ipc_receive`` with recvmsg's `flags` (MSG_DONTWAIT: -1 with EAGAIN when no
/// message is queued).
ssize_t plugboard_ipc_receive_flags(int socket, void *buffer, size_t capacity, int *received_fd, int flags);

/// 1 when the peer of `socket` has hung up (closed or shut down: POLLHUP, POLLRDHUP,
/// POLLERR), 0 when not, without waiting.
int plugboard_ipc_hung_up(int socket);

/// A close-on-exec memfd of `size` bytes, sealed so that its size can never change: a
/// peer that shrank it would make every access past the new end a SIGBUS in the other
/// process. Returns the descriptor, or -1 with errno set.
int plugboard_ipc_memfd(const char *name, size_t size);

/// Maps `size` bytes of `fd` shared, readable and writable; NULL (errno) on failure.
void *plugboard_ipc_map(int fd, size_t size);

/// Waits while `*word == expected`, at most `timeout_ns` (-1: no bound), on a futex that
/// works across processes (not FUTEX_PRIVATE). Returns 1 when the time ran out, 0 when
/// woken, interrupted or the word had already changed, -1 (errno) on any other failure.
int plugboard_ipc_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns);

/// Wakes up to `count` waiters on `word`.
void plugboard_ipc_futex_wake(uint32_t *word, int count);

/// The CPU this thread runs on (sched_getcpu; cheap through rseq), or -1.
int plugboard_ipc_current_cpu(void);

// Atomics on the mapping. Sequentially consistent where a store must be seen before the
// load that follows it (the sleeping flag against the position, both ways).

static inline uint64_t plugboard_ipc_load_acquire(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline uint64_t plugboard_ipc_load_seq(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static inline void plugboard_ipc_store_seq(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
static inline uint32_t plugboard_ipc_load32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static inline void plugboard_ipc_store32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
static inline void plugboard_ipc_store32_relaxed(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline uint32_t plugboard_ipc_load32_relaxed(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline uint32_t plugboard_ipc_exchange32(uint32_t *p, uint32_t v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }

/// The spin-wait hint (x86 `pause`, arm64 `yield`): lets the sibling hyperthread run and
/// costs no power while a reader spins on a position.
static inline void plugboard_ipc_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
