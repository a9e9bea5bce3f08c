// as-user <uid> <gid> <program> [<argument>...]
//
// Executes <program> as a process that permission bits apply to: the child through which
// tests run a subject whose "permission denied" they check. Root passes every permission
// check, and CI runs as root (docs/ARCHITECTURE.md, fact 19).
//
// - <uid> 0 (the test runner is root): stays root but without the capabilities that pass
//   permission checks (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER), dropped from the
//   bounding set, which is what root's capabilities after execve are. Not another user:
//   another user could not even reach a checkout under a folder only root may enter
//   (/root), and root's files then answer by their owner bits, as a user's own files do.
// - any other <uid> (the runner is that user): becomes it and <gid>, with no supplementary
//   groups when it may clear them; only its own ids work.
//
// In C because a process that runs threads (the test runner) cannot safely change its
// credentials between fork and exec, and Swift's Glibc overlay has no prctl.
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "as-user: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(127);
}

int main(int argc, char **argv) {
    if (argc < 4) fail("usage: as-user <uid> <gid> <program> [<argument>...]", NULL);
    char *end = NULL;
    unsigned long user = strtoul(argv[1], &end, 10);
    if (*argv[1] == 0 || *end != 0) fail("expected a numeric uid, found", argv[1]);
    unsigned long group = strtoul(argv[2], &end, 10);
    if (*argv[2] == 0 || *end != 0) fail("expected a numeric gid, found", argv[2]);

    if (user == 0) {
        if (geteuid() != 0) fail("uid 0 asks to stay root without its permission capabilities, but this process is not root", NULL);
        const int passes[] = {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER};
        for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
            if (prctl(PR_CAPBSET_DROP, passes[i], 0, 0, 0) != 0) fail("could not drop a capability from the bounding set", strerror(errno));
            // The check that the drop holds: a capability left would pass the very
            // permission checks the test is about.
            if (prctl(PR_CAPBSET_READ, passes[i], 0, 0, 0) != 0) fail("a permission capability is still in the bounding set", NULL);
        }
    } else {
        // Groups first, then the group, then the user: once the user is not root, the
        // other two can no longer be changed.
        if (geteuid() == 0 && setgroups(0, NULL) != 0) fail("could not clear supplementary groups", strerror(errno));
        if (setgid((gid_t)group) != 0) fail("could not become the group", strerror(errno));
        if (setuid((uid_t)user) != 0) fail("could not become the user", strerror(errno));
        if (setuid(0) == 0) fail("could become root again after dropping to another user", NULL);
    }
    execv(argv[3], argv + 3);
    fail("could not execute the program", strerror(errno));
    return 127;
}
