// The public header compiled as C++ (-Wall -Wextra -Werror -pedantic): extern "C" linkage.
#include "qkv.h"

int main()
{
    const float a[2] = {1.0f, 2.0f};
    return qkv_dot(a, a, 2) == 5.0f ? 0 : 1;
}
