/* Consumer smoke test: the public API links and gives right answers on every ISA. */
#include <math.h>
#include <qkv.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    const float a[5] = {1, 2, 3, 4, 5}, b[5] = {5, 4, 3, 2, 1};
    const float logits[3] = {1.0f, 2.0f, 3.0f};
    int bad = 0;
    /* every qkv_isa value: they are numbered from 0, and qkv_isa_name() says "unknown" past
       the last */
    for (int isa = 0; strcmp(qkv_isa_name((qkv_isa)isa), "unknown") != 0; isa++) {
        if (qkv_isa_select((qkv_isa)isa) != QKV_OK)
            continue;
        float p[3], e[1] = {1.0f};
        qkv_softmax(logits, p, 3, 1.0f);
        qkv_exp(e, e, 1);
        const double den = exp(1.0) + exp(2.0) + exp(3.0);
        const int ok = qkv_dot(a, b, 5) == 35.0f && fabs(p[2] - exp(3.0) / den) < 1e-6 &&
                       fabs(e[0] - 2.718281828) < 1e-6;
        printf("libqkv %s on %s: %s\n", qkv_version(), qkv_isa_name((qkv_isa)isa), ok ? "ok" : "WRONG");
        bad += !ok;
    }
    return bad || strcmp(qkv_strerror(QKV_ERR_ISA), "") == 0;
}
