// nowait-probe FILE SIZE ROUNDS SETTLE
//
// What preadv2(RWF_NOWAIT) answers for a file mincore shows uncached (docs/ARCHITECTURE.md,
// "The server core"; the figures are in docs/BENCHMARKS.md). Writes SIZE bytes to FILE and
// fsyncs them; then, ROUNDS times: when SETTLE is 1, a blocking one-byte read first, so
// that no read of the file is in flight; posix_fadvise(POSIX_FADV_DONTNEED); mincore,
// the round counted only when no page is resident; one RWF_NOWAIT read of the first KiB;
// when SETTLE is 1 and it said EAGAIN, mincore again 2 ms later, nothing else reading.
// Prints how many of the cold reads answered bytes (and the slowest of them), how many
// EAGAIN, and how many of those left the page resident.
//
//   cc -O2 -Wall -o /tmp/nowait-probe Tests/Tools/nowait-probe/nowait-probe.c
//   /tmp/nowait-probe /var/tmp/nowait 1048576 500 0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static int resident_pages(int fd, size_t size) {
    void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) { perror("mmap"); exit(1); }
    size_t pages = (size + 4095) / 4096;
    unsigned char *vector = malloc(pages);
    if (mincore(map, size, vector) != 0) { perror("mincore"); exit(1); }
    int count = 0;
    for (size_t i = 0; i < pages; i++) count += vector[i] & 1;
    free(vector);
    munmap(map, size);
    return count;
}

static double microseconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: nowait-probe FILE SIZE ROUNDS SETTLE\n"); return 2; }
    size_t size = strtoul(argv[2], NULL, 10);
    int rounds = atoi(argv[3]), settle = atoi(argv[4]);
    if (size < 1024) { fprintf(stderr, "SIZE must be at least 1024\n"); return 2; }
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror(argv[1]); return 1; }
    char *bytes = malloc(size);
    for (size_t i = 0; i < size; i++) bytes[i] = (char)(i * 7);
    if (write(fd, bytes, size) != (ssize_t)size || fsync(fd) != 0) { perror("write"); return 1; }
    int cold = 0, answered = 0, again = 0, readIn = 0, other = 0;
    double slowest = 0;
    for (int round = 0; round < rounds; round++) {
        char one;
        if (settle && pread(fd, &one, 1, 0) != 1) { perror("pread"); return 1; }
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        if (resident_pages(fd, size) != 0) continue;
        cold++;
        char buffer[1024];
        struct iovec io = { buffer, sizeof buffer };
        double start = microseconds();
        ssize_t n = preadv2(fd, &io, 1, 0, RWF_NOWAIT);
        double took = microseconds() - start;
        if (n >= 0) {
            answered++;
            if (took > slowest) slowest = took;
        } else if (errno == EAGAIN) {
            again++;
            // Nothing else reads the file: a page resident a moment later was read in
            // because the refused read started it.
            if (settle) {
                usleep(2000);
                if (resident_pages(fd, size) != 0) readIn++;
            }
        } else {
            other++;
        }
    }
    printf("size %zu settle %d: %d cold reads, %d answered bytes (slowest %.1f us), %d EAGAIN (%d of them read in 2 ms later), %d other errors\n",
           size, settle, cold, answered, slowest, again, readIn, other);
    unlink(argv[1]);
    return 0;
}
