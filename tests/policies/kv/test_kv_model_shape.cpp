// KV byte accounting for V4 layer types (V4_SPEC.md §5.2) and "how many sequences fit".
#include <catch2/catch.hpp>

#include "policies/common/units.h"
#include "policies/kv/block_pool.h"
#include "policies/kv/kv_model_shape.h"

using namespace deepinfer;

TEST_CASE("KvModelShape: V4-Flash grows 6880 bytes per token (21 CSA x 320 + 20 HCA x 8)", "[policies][kv]") {
    const KvModelShape v4;
    CHECK(kv_bytes_per_token(v4) == 6880.0);
    CHECK(kv_bytes_per_block(v4, 128) == 6880.0 * 128);
    KvModelShape fp32 = v4;
    fp32.dtype_bytes = 4;
    CHECK(kv_bytes_per_token(fp32) == 2 * 6880.0);
}

TEST_CASE("KvModelShape: bounded state is 44 sliding windows plus compressor buffers", "[policies][kv]") {
    const KvModelShape v4;
    // 43 layers + MTP, 128 x 512 x 2 B each.
    CHECK(kv_sliding_bytes_per_seq(v4) == 44 * 128 * units::kKiB);
    // HF layout: CSA <= 25.6 KB each, HCA <= 254 KiB each.
    CHECK(kv_compressor_bytes_per_seq(v4) == 21 * 25600.0 + 20 * 254 * units::kKiB);
    KvModelShape online = v4;
    online.online_compressor_state = true;
    // fp32 accumulators: CSA 2x3x512 + 2x3x128 values, HCA 3x512 values (~0.42 MiB in all).
    CHECK(kv_compressor_bytes_per_seq(online) == (21 * 3840.0 + 20 * 1536.0) * 4);
    CHECK(kv_compressor_bytes_per_seq(online) / units::kMiB == Approx(0.42).margin(0.01));
    // SWA-only layers contribute nothing that grows.
    KvModelShape swa_only = v4;
    swa_only.num_csa_layers = swa_only.num_hca_layers = 0;
    CHECK(kv_bytes_per_token(swa_only) == 0.0);
}

TEST_CASE("KvModelShape: a 128K-token V4-Flash sequence takes 0.85 GiB", "[policies][kv]") {
    const double bytes = kv_bytes_per_seq(KvModelShape{}, 128 * 1024, 128);
    CHECK(bytes / units::kGiB == Approx(0.85).margin(0.005));
    // 1M tokens: 6.7 GiB.
    CHECK(kv_bytes_per_seq(KvModelShape{}, 1 << 20, 128) / units::kGiB == Approx(6.7).margin(0.05));
}

TEST_CASE("KvBlockPool: the number of V4-Flash sequences that fit in 80 GiB is exact", "[policies][kv]") {
    KvBlockPool pool({.capacity_bytes = 80 * units::kGiB, .block_tokens = 128, .shape = KvModelShape{}});
    const std::int64_t ctx = 128 * 1024;
    const std::int64_t fit = pool.max_seqs_that_fit(ctx);
    CHECK(fit == static_cast<std::int64_t>(80 * units::kGiB / kv_bytes_per_seq(KvModelShape{}, ctx, 128)));
    CHECK(fit == 94);
    // Fill the pool sequence by sequence: exactly `fit` of them succeed.
    std::vector<BlockId> blocks;
    std::int64_t admitted = 0;
    while (pool.can_allocate(1024, 1)) {
        pool.allocate(1024, blocks);
        pool.add_seq_state();
        ++admitted;
    }
    CHECK(admitted == fit);
    pool.check_invariants();
    // Short contexts are bounded by the per-sequence state, not by blocks.
    CHECK(pool.max_seqs_that_fit(1) == static_cast<std::int64_t>(80 * units::kGiB /
                                                                 (kv_fixed_bytes_per_seq(KvModelShape{}) +
                                                                  kv_bytes_per_block(KvModelShape{}, 128))));
}
