// The resolve path's thread-local pointer, as a C `__thread` variable.
//
// Swift has no thread-local variables; pthread_getspecific costs a call through the PLT
// on every resolve. An initial-exec TLS variable is one %fs-relative load. Initial-exec is
// safe here because libPlugboardAPI.so is always loaded at process start (the host lists
// it as NEEDED), never first by dlopen.
#ifndef C_PLUGBOARD_THREAD_LOCAL_H
#define C_PLUGBOARD_THREAD_LOCAL_H

extern __thread void *_Nullable plugboard_thread_state __attribute__((tls_model("initial-exec")));

static inline void *_Nullable plugboard_thread_state_get(void) {
    return plugboard_thread_state;
}

static inline void plugboard_thread_state_set(void *_Nullable state) {
    plugboard_thread_state = state;
}

#endif
