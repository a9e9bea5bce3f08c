#ifndef CPLUGBOARD_SYSTEM_H
#define CPLUGBOARD_SYSTEM_H

// The few system calls Glibc's Swift overlay does not expose (variadic ones such as
// prctl), for the host's child processes and crash reports.

/// prctl(PR_SET_PDEATHSIG, signal): the kernel sends `signal` to this process when the
/// thread that created it exits. Returns 0, or -1 with errno set.
int plugboard_set_parent_death_signal(int signal);

/// pipe2(fds, O_CLOEXEC): a pipe no spawned child inherits unless it is handed over on
/// purpose. Returns 0, or -1 with errno set.
int plugboard_pipe_cloexec(int fds[2]);

/// Remembers the address range of a mapped plugin image and the plugin names it serves,
/// so that a crash report can say whose code was running. Returns 0, or -1 when the table
/// is full. Safe to call while other threads run; never frees.
int plugboard_crash_register_image(unsigned long start, unsigned long end, const char *names);

/// Registers the whole image that contains `symbol` (its loadable segments), as
/// plugboard_crash_register_image does. Returns 0, or -1 if no image contains it.
int plugboard_crash_register_library(const void *symbol, const char *names);

/// Installs handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP and SIGABRT that, before
/// handing the signal to the handler installed before them (the Swift backtracer, or the
/// default action), write one line to standard error naming the plugin whose code is on
/// the crashing thread's stack, if any. Idempotent.
void plugboard_crash_install(void);


// libcurl's variadic curl_easy_setopt and curl_easy_getinfo, called through the pointers
// dlsym gave (the https fetch loads libcurl only when a source needs it), with the one
// argument type each option takes: Swift cannot call a C variadic function pointer.

/// curl_easy_setopt(handle, option, (long)value).
int plugboard_curl_setopt_long(void *setopt, void *handle, int option, long value);
/// curl_easy_setopt(handle, option, pointer): strings, lists, callbacks' data.
int plugboard_curl_setopt_pointer(void *setopt, void *handle, int option, const void *value);
/// curl_easy_setopt(handle, option, (curl_off_t)value).
int plugboard_curl_setopt_offset(void *setopt, void *handle, int option, long long value);
/// curl_easy_setopt(handle, option, callback) for CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION.
int plugboard_curl_setopt_callback(void *setopt, void *handle, int option,
                                   unsigned long (*callback)(char *data, unsigned long size, unsigned long count, void *context));
/// curl_easy_getinfo(handle, info, &value) for a long.
int plugboard_curl_getinfo_long(void *getinfo, void *handle, int info, long *value);

#endif
