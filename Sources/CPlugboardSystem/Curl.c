#include "CPlugboardSystem.h"

typedef int (*plugboard_curl_setopt_fn)(void *handle, int option, ...);
typedef int (*plugboard_curl_getinfo_fn)(void *handle, int info, ...);

int plugboard_curl_setopt_long(void *setopt, void *handle, int option, long value) {
    return ((plugboard_curl_setopt_fn)setopt)(handle, option, value);
}

int plugboard_curl_setopt_pointer(void *setopt, void *handle, int option, const void *value) {
    return ((plugboard_curl_setopt_fn)setopt)(handle, option, value);
}

int plugboard_curl_setopt_offset(void *setopt, void *handle, int option, long long value) {
    return ((plugboard_curl_setopt_fn)setopt)(handle, option, value);
}

int plugboard_curl_setopt_callback(void *setopt, void *handle, int option,
                                   unsigned long (*callback)(char *data, unsigned long size, unsigned long count, void *context)) {
    return ((plugboard_curl_setopt_fn)setopt)(handle, option, callback);
}

int plugboard_curl_getinfo_long(void *getinfo, void *handle, int info, long *value) {
    return ((plugboard_curl_getinfo_fn)getinfo)(handle, info, value);
}
