/* Compiled as C99 and C11 with -Wall -Wextra -Werror -pedantic (and as C++ by
 * check_header.cc): the public header must be clean in each. */
#include "qkv.h"

int main(void)
{
    return qkv_isa_name(QKV_ISA_SCALAR)[0] == 's' ? 0 : 1;
}
