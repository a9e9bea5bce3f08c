#ifndef CPLUGBOARD_IPC_H
#define CPLUGBOARD_IPC_H

#include <stddef.h>
#include <sys/types.h>

// What a worker's wire needs that Swift's Glibc overlay cannot express: the control
// message that carries a descriptor (CMSG_* are macros), socketpair with its flags.

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

#endif
