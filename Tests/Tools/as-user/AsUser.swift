// as-user <uid> <gid> <program> [<argument>...]
//
// Becomes user <uid> and group <gid>, with no supplementary groups, and then executes
// <program>: the child through which tests run a subject as a user permission bits apply
// to. Root passes every permission check, and CI runs as root, so a test of "permission
// denied" must run its subject as someone else (docs/ARCHITECTURE.md, fact 19). A
// separate executable, because a process that runs threads (the test runner) cannot
// safely change its user between fork and exec from Swift.
#if canImport(Glibc)
import Glibc
#endif

@main
enum AsUser {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count >= 4, let user = uid_t(arguments[1]), let group = gid_t(arguments[2]) else {
            fail("usage: as-user <uid> <gid> <program> [<argument>...]")
        }
        // Groups first, then the group, then the user: once the user is not root, the
        // other two can no longer be changed. Not root already: only our own ids work,
        // and setgroups is not allowed at all.
        if geteuid() == 0, setgroups(0, nil) != 0 { fail("as-user: could not clear supplementary groups: \(reason())") }
        if setgid(group) != 0 { fail("as-user: could not become group \(group): \(reason())") }
        if setuid(user) != 0 { fail("as-user: could not become user \(user): \(reason())") }
        // The check that the drop holds: a process that can become root again would pass
        // the very permission checks the test is about.
        if user != 0, setuid(0) == 0 { fail("as-user: could become root again after dropping to user \(user)") }
        let argv = arguments[3...].map { strdup($0) } + [nil]
        execv(arguments[3], argv)
        fail("as-user: could not execute \(arguments[3]) as user \(user): \(reason()) (the user must be able to search every folder above it: a checkout under a folder only root may enter, such as /root, cannot be run as another user)")
    }

    static func reason() -> String { String(cString: strerror(errno)) }

    static func fail(_ message: String) -> Never {
        let line = Array((message + "\n").utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(127)
    }
}
