// WindowBalancer: decisions every period, the sliding window, the predictor, the move-cost rule.
#include <catch2/catch.hpp>
#include <functional>
#include <thread>
#include <vector>

#include "policies/eplb/predictor.h"
#include "policies/eplb/window_balancer.h"

using namespace deepinfer;

namespace {

/// 2 layers x 8 experts; expert `hot` of every layer gets `hot_tokens`, the others 1 token.
ExpertLoadSample sample(std::int32_t hot, std::int64_t hot_tokens) {
    ExpertLoadSample s{.num_layers = 2, .num_experts = 8, .tokens = std::vector<std::int64_t>(16, 1)};
    s.tokens[static_cast<std::size_t>(hot)] = hot_tokens;
    s.tokens[static_cast<std::size_t>(8 + hot)] = hot_tokens;
    return s;
}

BalancerConfig config(std::int32_t window, std::int32_t period) {
    BalancerConfig c;
    c.window_steps = window;
    c.period_steps = period;
    c.num_buckets = 2;
    c.placement.redundant_per_gpu = 1;
    c.predictor.kind = PredictorKind::kLastWindow;
    return c;
}

/// 2 layers x 8 experts on 4 GPUs x 3 slots: GPU g holds 2g, 2g+1 and (2g+2) mod 8.
ExpertPlacement three_slot_start() {
    ExpertPlacement start = make_identity_placement(2, 8, 4);
    for (auto& layer : start.layers) {
        std::vector<LogicalExpertId> ids;
        for (std::int32_t g = 0; g < 4; ++g) {
            ids.emplace_back(2 * g);
            ids.emplace_back(2 * g + 1);
            ids.emplace_back((2 * g + 2) % 8);
        }
        layer.phy2log = ids;
    }
    return start;
}

}  // namespace

TEST_CASE("WindowBalancer: a config that does not match the initial placement is rejected",
          "[policies][eplb]") {
    // One redundant slot per GPU asks for 3 slots per GPU; the identity placement has 2.
    CHECK_THROWS_WITH(WindowBalancer(config(4, 3), make_identity_placement(2, 8, 4)),
                      Catch::Contains("redundant_per_gpu"));
    auto c = config(4, 3);
    c.period_steps = 0;
    CHECK_THROWS_WITH(WindowBalancer(c, make_identity_placement(2, 8, 4)), Catch::Contains("period_steps"));
}

TEST_CASE("WindowBalancer: decisions come every period_steps observed steps", "[policies][eplb]") {
    WindowBalancer b(config(4, 3), three_slot_start());
    std::vector<std::int64_t> replaced_at;
    for (std::int64_t step = 0; step < 10; ++step) {
        b.observe(step, step < 3 ? ExpertLoadSample{} : sample(step % 2 == 0 ? 0 : 5, 100));
        if (b.maybe_replace(step)) replaced_at.push_back(step);
    }
    // Step 2: due, but the window saw no load yet. Steps 5 and 8: due with load.
    CHECK(replaced_at == std::vector<std::int64_t>{5, 8});
    CHECK(b.stats().num_decisions == 2);
    CHECK(b.stats().num_steps_observed == 10);
}

TEST_CASE("WindowBalancer: the window forgets steps older than window_steps (in whole buckets)",
          "[policies][eplb]") {
    auto c = config(4, 1000);
    c.placement.redundant_per_gpu = 0;
    WindowBalancer b(c, make_identity_placement(2, 8, 4));
    for (std::int64_t step = 0; step < 4; ++step) b.observe(step, sample(0, 100));
    CHECK(b.window_loads().at(0, 0) == Approx(100.0));
    for (std::int64_t step = 4; step < 8; ++step) b.observe(step, sample(5, 50));
    // Buckets of 2 steps, 2 buckets: the window now holds steps 4..7 only.
    CHECK(b.steps_in_window() == 4);
    CHECK(b.window_loads().at(0, 0) == Approx(1.0));
    CHECK(b.window_loads().at(1, 5) == Approx(50.0));
    b.observe(8, sample(5, 50));  // a new bucket starts: steps 6..8 remain
    CHECK(b.steps_in_window() == 3);
}

TEST_CASE("WindowBalancer: a re-placement spreads the hot expert and reports its copies",
          "[policies][eplb]") {
    auto c = config(4, 4);
    const ExpertPlacement start = three_slot_start();
    REQUIRE(start.validate().empty());
    WindowBalancer bal(c, start);
    std::optional<ExpertPlacement> placed;
    for (std::int64_t step = 0; step < 4; ++step) {
        bal.observe(step, sample(3, 1000));
        placed = bal.maybe_replace(step);
    }
    REQUIRE(placed.has_value());
    CHECK(placed->validate().empty());
    CHECK(replica_counts(placed->layers[0], 8)[3] >= 2);
    const auto w = bal.window_loads();
    CHECK(measure_balance(placed->layers[0], w.layer(0), 4).imbalance() < 1.01);
    CHECK(apply_moves(start, bal.last_moves()).layers[1].phy2log == placed->layers[1].phy2log);
}

TEST_CASE("WindowBalancer: a layer whose gain does not pay for its copies keeps its slots",
          "[policies][eplb]") {
    auto c = config(4, 4);
    c.expert_bytes = 1'000'000'000;
    c.copy_bytes_per_s = 1e9;  // one expert copy: 1 s
    c.s_per_token = 1e-9;      // the gain is tiny next to that
    const ExpertPlacement start = three_slot_start();
    SECTION("weighted split: only the router split is re-balanced, nothing is copied") {
        WindowBalancer b(c, start);
        std::optional<ExpertPlacement> placed;
        for (std::int64_t step = 0; step < 4; ++step) {
            b.observe(step, sample(3, 1000));
            if (auto p = b.maybe_replace(step)) placed = std::move(p);
        }
        CHECK(b.stats().num_layers_kept == 2);
        CHECK(b.last_moves().empty());
        CHECK(b.stats().last_cost_s == 0.0);
        for (std::size_t l = 0; l < start.layers.size(); ++l)
            CHECK(b.current().layers[l].phy2log == start.layers[l].phy2log);
        if (placed) CHECK(placed->layers[0].phy2log == start.layers[0].phy2log);
    }
    SECTION("uniform split: the layers stay as they are, no re-placement") {
        c.placement.split = SplitMode::kUniform;
        WindowBalancer b(c, start);
        for (std::int64_t step = 0; step < 4; ++step) {
            b.observe(step, sample(3, 1000));
            CHECK_FALSE(b.maybe_replace(step).has_value());
        }
        CHECK(b.stats().num_layers_kept == 2);
        CHECK(b.stats().num_replacements == 0);
    }
    SECTION("every token-step worth a second: the layers move") {
        c.s_per_token = 1.0;
        WindowBalancer eager(c, start);
        std::optional<ExpertPlacement> placed;
        for (std::int64_t step = 0; step < 4; ++step) {
            eager.observe(step, sample(3, 1000));
            placed = eager.maybe_replace(step);
        }
        CHECK(placed.has_value());
        CHECK(eager.stats().num_replacements == 1);
        CHECK(eager.stats().num_layers_kept == 0);
        CHECK_FALSE(eager.last_moves().empty());
    }
}

TEST_CASE("LoadPredictor: EMA and Holt follow a drifting load better than the last window",
          "[policies][eplb]") {
    // One expert's load ramps up linearly with noise-free steps: Holt extrapolates the trend.
    auto window = [](double v) { return LoadMatrix{.num_layers = 1, .num_experts = 2, .tokens = {v, 10.0}}; };
    LoadPredictor last({.kind = PredictorKind::kLastWindow, .alpha = 1.0, .beta = 0.5});
    LoadPredictor holt({.kind = PredictorKind::kHolt, .alpha = 0.8, .beta = 0.8});
    for (int t = 0; t < 20; ++t) last.observe(window(10.0 * t)), holt.observe(window(10.0 * t));
    CHECK(last.predict().at(0, 0) == Approx(190.0));
    CHECK(std::abs(holt.predict().at(0, 0) - 200.0) < std::abs(last.predict().at(0, 0) - 200.0));
    // Noise around a constant: EMA averages it out.
    LoadPredictor ema({.kind = PredictorKind::kEma, .alpha = 0.3, .beta = 0.5});
    for (int t = 0; t < 20; ++t) ema.observe(window(t % 2 == 0 ? 80.0 : 120.0));
    CHECK(std::abs(ema.predict().at(0, 0) - 100.0) < 20.0);
    CHECK_THROWS_WITH(parse_predictor_kind("arima"), Catch::Contains("predictor"));
}

TEST_CASE("WindowBalancer: per-layer choices spread over threads give the same placements",
          "[policies][eplb][parallel]") {
    auto c = config(4, 4);
    c.expert_bytes = 1'000'000;
    c.copy_bytes_per_s = 1e9;
    c.s_per_token = 1e-6;
    WindowBalancer serial(c, three_slot_start());
    c.parallel_for = [](std::size_t n, const std::function<void(std::size_t)>& fn) {
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < n; ++i) threads.emplace_back([&fn, i] { fn(i); });
        for (std::thread& t : threads) t.join();
    };
    WindowBalancer threaded(c, three_slot_start());
    for (std::int64_t step = 0; step < 40; ++step) {
        const ExpertLoadSample s = sample(static_cast<std::int32_t>((step / 4) % 8), 100 + 37 * (step % 5));
        serial.observe(step, s);
        threaded.observe(step, s);
        const auto a = serial.maybe_replace(step);
        const auto b = threaded.maybe_replace(step);
        REQUIRE(a.has_value() == b.has_value());
        if (a) CHECK(a->layers == b->layers);
    }
    CHECK(serial.stats().num_replacements > 0);
    CHECK(serial.stats().num_layers_kept == threaded.stats().num_layers_kept);
    CHECK(serial.stats().num_layers_swapped == threaded.stats().num_layers_swapped);
    CHECK(serial.stats().num_layers_new == threaded.stats().num_layers_new);
}

TEST_CASE("WindowBalancer: with node-first placement the move-aware rounds stay inside each node",
          "[policies][eplb]") {
    // 2 nodes x 2 GPUs x 3 slots, experts 0-3 on node 0 and 4-7 on node 1 (GPU 0: 0 1 2, GPU 1:
    // 3 0 1, GPU 2: 4 5 6, GPU 3: 7 4 5). Expert 2 turns hot: one copy inside node 0 gives it a
    // second replica, which beats placing the layer anew.
    auto c = config(4, 4);
    c.placement.num_nodes = 2;
    c.placement.hierarchical = true;
    c.expert_bytes = 1'000'000'000;
    c.copy_bytes_per_s = 1e9;  // one expert copy: 1 s
    c.s_per_token = 0.01;
    ExpertPlacement start = make_identity_placement(2, 8, 4);
    start.num_nodes = 2;
    for (auto& layer : start.layers) {
        layer.phy2log.clear();
        for (std::int32_t e : {0, 1, 2, 3, 0, 1, 4, 5, 6, 7, 4, 5}) layer.phy2log.emplace_back(e);
    }
    REQUIRE(start.validate().empty());
    WindowBalancer b(c, start);
    std::optional<ExpertPlacement> placed;
    for (std::int64_t step = 0; step < 4; ++step) {
        b.observe(step, sample(2, 1000));
        if (auto p = b.maybe_replace(step)) placed = std::move(p);
    }
    REQUIRE(placed.has_value());
    CHECK(b.stats().num_layers_swapped == 2);
    for (const LayerPlacement& layer : placed->layers) {
        std::int32_t replicas_of_2 = 0;
        for (std::size_t s = 0; s < layer.phy2log.size(); ++s) {
            const std::int32_t e = layer.phy2log[s].value();
            CHECK((e < 4) == (s < 6));  // every expert on its node
            replicas_of_2 += e == 2 ? 1 : 0;
        }
        CHECK(replicas_of_2 == 2);
    }
}
