// The V4-Flash roofline formulas against the figures printed in V4_SPEC.md §5 and §10, and the
// derived profiles against the CostModel's schema checks.
#include <catch2/catch.hpp>

#include "policies/cost/cost_model.h"
#include "policies/cost/roofline.h"

using namespace deepinfer;
using namespace deepinfer::roofline;

TEST_CASE("Roofline: V4-Flash sizes match V4_SPEC section 10", "[policies][cost][roofline]") {
    CHECK(v4_active_params_per_token() / 1e9 == Approx(13.27).margin(0.005));
    CHECK(v4_dense_bytes_hub() / 1e9 == Approx(7.77).margin(0.005));
    CHECK(v4_routed_expert_bytes_hub() / 1e6 == Approx(13.37).margin(0.005));
    CHECK(v4_routed_expert_params() == 25165824.0);
    // Weight matmuls: 2 x active parameters = 26.5 GFLOP per token.
    CHECK(2 * v4_active_params_per_token() / 1e9 == Approx(26.5).margin(0.05));
}

TEST_CASE("Roofline: KV sizes and per-token reads match V4_SPEC section 5", "[policies][cost][roofline]") {
    CHECK(kv_bytes_per_token() == 6880.0);
    // Indexer scoring 0.54 GFLOP per CSA layer at 128 K.
    CHECK(csa_indexer_flops(131072) / 1e9 == Approx(0.537).margin(0.005));
    // Whole-model decode read: 21.8 MiB at 4 K, 204 MiB at 128 K.
    auto whole = [](double n) {
        return 2 * swa_read_bytes(n) + 21 * csa_read_bytes(n) + 20 * hca_read_bytes(n);
    };
    CHECK(whole(4096) / (1024.0 * 1024.0) == Approx(21.8).margin(0.1));
    CHECK(whole(131072) / (1024.0 * 1024.0) == Approx(204).margin(1.0));
    CHECK(csa_keys(131072) == 128 + 512);
    CHECK(hca_keys(131072) == 128 + 1024);
}

TEST_CASE("Roofline: decode of one token is bandwidth-bound, a long prefill chunk compute-bound",
          "[policies][cost][roofline]") {
    const HardwareSpec h200 = hardware_spec("h200");
    const Efficiency eff;
    // One token: the dense weights' read dominates (7.77 GB at 0.8 x 4.8 TB/s ~ 2.0 ms).
    CHECK(dense_us(h200, eff, 1) == Approx(7.77e9 / (4.8e12 * 0.8) * 1e6 + 43 * eff.launch_us).epsilon(0.01));
    // 16 K tokens: FLOPs dominate and time grows linearly with tokens.
    const double t16 = dense_us(h200, eff, 16384), t32 = dense_us(h200, eff, 32768);
    CHECK((t32 - 43 * eff.launch_us) / (t16 - 43 * eff.launch_us) == Approx(2.0).epsilon(0.01));
    // B200 is faster than H200 everywhere.
    const HardwareSpec b200 = hardware_spec("b200");
    for (double t : {1.0, 64.0, 4096.0}) CHECK(dense_us(b200, eff, t) < dense_us(h200, eff, t));
    CHECK_THROWS_AS(hardware_spec("a100"), ConfigError);
}

TEST_CASE("Roofline: derived profiles carry kind/method and pass the CostModel's axis checks",
          "[policies][cost][roofline]") {
    for (const char* hw : {"h200", "b200"}) {
        const ProfileSet set = derive_profile(hardware_spec(hw), Efficiency{}, "2026-01-01", "test");
        CHECK(set.name == std::string(hw) + "-roofline");
        for (const auto& [g, p] : set.groups) {
            CHECK(p.meta.kind == "derived");
            CHECK(p.meta.method == "roofline");
            CHECK_FALSE(p.meta.notes.empty());
        }
        const CostModel cm(set, ModelShape::v4_flash());
        StepShape decode{.num_tokens = 64,
                         .num_seqs = 64,
                         .num_sampled = 64,
                         .mean_context = 8192,
                         .moe_tokens_per_rank = 384,
                         .moe_experts_per_rank = 5,
                         .ep_tokens = 320};
        const StepCost c = cm.step_cost(decode);
        CHECK(c.total_s() > 1e-3);
        CHECK(c.total_s() < 20e-3);
    }
}
