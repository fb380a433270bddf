/* Benchmarks of qkv_convert between float and the 16-bit floats, for every ISA this host
 * supports, beside a plain memcpy of the same bytes:
 *
 *   convert/<isa>/<from>_<to>/N     qkv_convert after qkv_isa_select(isa), N elements,
 *                                   f32_f16, f16_f32, f32_bf16, bf16_f32
 *   convert/memcpy/<from>_<to>/N    memcpy of 3N bytes: the same 6N bytes moved (read +
 *                                   written) as one conversion of N elements
 *
 * Counters: items/s (elements) and bytes/s = (bytes read + bytes written) / s, so the
 * memcpy row is the speed a conversion would have if it cost nothing but its memory
 * traffic. N = 4096 (24 KiB: L1/L2) and 1Mi (6 MiB: L3/DRAM). Buffers are 64-byte aligned
 * and reused by every iteration. The F32 input spans the F16 range with some subnormals. */
#include "bench_util.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

using qkv_bench::Buffer;

constexpr std::size_t kSizes[] = {4096, 1u << 20};

struct Pair {
    const char *name;
    qkv_dtype from, to;
};
constexpr Pair kPairs[] = {
    {"f32_f16", QKV_F32, QKV_F16},
    {"f16_f32", QKV_F16, QKV_F32},
    {"f32_bf16", QKV_F32, QKV_BF16},
    {"bf16_f32", QKV_BF16, QKV_F32},
};

void set_counters(benchmark::State &st, std::size_t n)
{
    const auto iters = static_cast<int64_t>(st.iterations());
    st.SetItemsProcessed(iters * static_cast<int64_t>(n));
    st.SetBytesProcessed(iters * static_cast<int64_t>(n * (sizeof(float) + sizeof(uint16_t))));
}

void bm_convert(benchmark::State &st, qkv_isa isa, Pair p, std::size_t n)
{
    if (!qkv_bench::select_isa(st, isa))
        return;
    /* a float buffer of n holds the n 16-bit values too */
    Buffer f = qkv_bench::alloc_floats(n), h = qkv_bench::alloc_floats(n);
    qkv_bench::fill_uniform(f.get(), n, -60000.0f, 60000.0f, 5);
    for (std::size_t i = 0; i < n; i += 7)
        f[i] *= 0x1p-30f;
    qkv_convert(f.get(), QKV_F32, h.get(), p.from == QKV_F32 ? p.to : p.from, n); /* valid 16-bit input */
    const void *src = p.from == QKV_F32 ? static_cast<const void *>(f.get()) : h.get();
    void *dst = p.from == QKV_F32 ? static_cast<void *>(h.get()) : f.get();
    for (auto _ : st) {
        benchmark::DoNotOptimize(qkv_convert(src, p.from, dst, p.to, n));
        benchmark::ClobberMemory();
    }
    set_counters(st, n);
}

void bm_memcpy(benchmark::State &st, std::size_t n)
{
    const std::size_t bytes = n * (sizeof(float) + sizeof(uint16_t)) / 2;
    Buffer a = qkv_bench::alloc_floats(bytes / sizeof(float)), b = qkv_bench::alloc_floats(bytes / sizeof(float));
    qkv_bench::fill_uniform(a.get(), bytes / sizeof(float), -1.0f, 1.0f, 6);
    for (auto _ : st) {
        std::memcpy(b.get(), a.get(), bytes);
        benchmark::ClobberMemory();
    }
    set_counters(st, n);
}

void register_all()
{
    for (const Pair &p : kPairs)
        for (std::size_t n : kSizes) {
            const std::string tail = std::string("/") + p.name + "/" + std::to_string(n);
            for (qkv_isa isa : qkv_bench::host_isas())
                benchmark::RegisterBenchmark(("convert/" + std::string(qkv_isa_name(isa)) + tail).c_str(),
                                             [=](benchmark::State &st) { bm_convert(st, isa, p, n); });
            benchmark::RegisterBenchmark(("convert/memcpy" + tail).c_str(),
                                         [=](benchmark::State &st) { bm_memcpy(st, n); });
        }
}

} // namespace

int main(int argc, char **argv)
{
    return qkv_bench::main(argc, argv, register_all);
}
