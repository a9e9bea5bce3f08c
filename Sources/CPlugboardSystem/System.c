#define _GNU_SOURCE
#include "CPlugboardSystem.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <ucontext.h>
#include <unistd.h>

int plugboard_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0UL, 0UL, 0UL);
}

int plugboard_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

// A fixed table: a signal handler may not allocate or take locks. Entries are appended
// and published by bumping `image_count` after the entry is written.
#define MAX_IMAGES 1024
#define MAX_NAMES 256
struct image_range {
    uintptr_t start, end;
    char names[MAX_NAMES];
};
static struct image_range images[MAX_IMAGES];
static volatile int image_count = 0;
static volatile int reserve_count = 0;

int plugboard_crash_register_image(unsigned long start, unsigned long end, const char *names) {
    int slot = __atomic_fetch_add(&reserve_count, 1, __ATOMIC_SEQ_CST);
    if (slot >= MAX_IMAGES) return -1;
    images[slot].start = start;
    images[slot].end = end;
    strncpy(images[slot].names, names, MAX_NAMES - 1);
    images[slot].names[MAX_NAMES - 1] = 0;
    // Publish in slot order, so a reader never sees an entry half written.
    while (__atomic_load_n(&image_count, __ATOMIC_ACQUIRE) != slot) {}
    __atomic_store_n(&image_count, slot + 1, __ATOMIC_RELEASE);
    return 0;
}

struct search { uintptr_t base; uintptr_t start, end; };

static int find_segments(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct search *s = (struct search *)data;
    if ((uintptr_t)info->dlpi_addr != s->base) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t a = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
        uintptr_t b = a + ph->p_memsz;
        if (s->start == 0 || a < s->start) s->start = a;
        if (b > s->end) s->end = b;
    }
    return 1;
}

int plugboard_crash_register_library(const void *symbol, const char *names) {
    Dl_info info;
    if (!dladdr(symbol, &info) || !info.dli_fbase) return -1;
    // dlpi_addr is the load bias, which for a shared object is its base address.
    struct search s = {(uintptr_t)info.dli_fbase, 0, 0};
    if (!dl_iterate_phdr(find_segments, &s) || s.end <= s.start) return -1;
    return plugboard_crash_register_image(s.start, s.end, names);
}

static const struct image_range *image_at(uintptr_t pc) {
    int n = __atomic_load_n(&image_count, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        if (pc >= images[i].start && pc < images[i].end) return &images[i];
    }
    return 0;
}

static void put(const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(2, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static const int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT};
#define SIGNAL_COUNT (sizeof(signals) / sizeof(signals[0]))
static struct sigaction previous[SIGNAL_COUNT];
static volatile int installed = 0;

// Walks the frame-pointer chain from the faulting context (Swift and clang keep frame
// pointers on x86_64 Linux), checking the program counter and each return address
// against the plugin images. Every frame pointer must lie above the last, within 8 MiB
// of the stack pointer: a corrupt chain ends the walk rather than faulting again.
static const struct image_range *plugin_on_stack(void *context) {
#if defined(__x86_64__)
    ucontext_t *uc = (ucontext_t *)context;
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    const struct image_range *hit = image_at(pc);
    for (int depth = 0; !hit && depth < 256; depth++) {
        if (fp < sp || fp > sp + (8u << 20) || (fp & 7) != 0) break;
        uintptr_t ret = ((uintptr_t *)fp)[1];
        uintptr_t next = ((uintptr_t *)fp)[0];
        hit = image_at(ret);
        if (next <= fp) break;
        fp = next;
    }
    return hit;
#else
    (void)context;
    return 0;
#endif
}

static void handler(int sig, siginfo_t *info, void *context) {
    const struct image_range *hit = plugin_on_stack(context);
    if (hit) {
        put("plugboard: fatal signal ");
        char num[8];
        int v = sig, i = 6;
        num[7] = 0;
        do { num[i--] = (char)('0' + v % 10); v /= 10; } while (v > 0 && i >= 0);
        put(&num[i + 1]);
        put(" while running code of plugin ");
        put(hit->names);
        put("\n");
    }
    for (unsigned k = 0; k < SIGNAL_COUNT; k++) {
        if (signals[k] != sig) continue;
        struct sigaction *old = &previous[k];
        if (old->sa_flags & SA_SIGINFO) {
            if (old->sa_sigaction) { old->sa_sigaction(sig, info, context); return; }
        } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
            old->sa_handler(sig);
            return;
        }
        // The default action: re-raise with it, so the exit status names the signal.
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
}

void plugboard_crash_install(void) {
    if (__atomic_exchange_n(&installed, 1, __ATOMIC_SEQ_CST)) return;
    for (unsigned k = 0; k < SIGNAL_COUNT; k++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = handler;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(signals[k], &sa, &previous[k]);
    }
}
