#include "CPlugboardThreadLocal.h"

__thread void *_Nullable plugboard_thread_state __attribute__((tls_model("initial-exec"))) = 0;
