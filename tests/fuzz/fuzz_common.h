/* Shared by the libFuzzer targets: a violation prints the active ISA and why, then aborts
 * (libFuzzer saves the input). The references and tolerances are the tests' (oracles.h). */
#ifndef QKV_FUZZ_COMMON_H
#define QKV_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#include "../oracles.h"
#include "isa_list.h"
#include "qkv.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "[%s] ", qkv_isa_name(qkv_isa_active()));                                   \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        abort();                                                                                   \
    } while (0)

#endif
