// DSpark verify policies: fixed-k, confidence threshold, and the exact throughput-optimal choice.
#include "policies/dspark/verify_policy.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "policies/common/check.h"

namespace deepinfer {
namespace {

float clamp_confidence(float c) {
    if (!(c > 0.0F)) return 0.0F;  // NaN and negatives
    return c > 1.0F ? 1.0F : c;
}

std::int32_t usable_drafts(const SeqDrafts& d, std::int32_t k) {
    return std::clamp(d.num_drafts, 0, std::min(k, kMaxDraftTokens));
}

std::int64_t verify_room(const VerifyInput& in) {
    const auto other = static_cast<std::int64_t>(std::ceil(std::max(0.0, in.step.other.num_tokens)));
    return in.token_budget <= other ? 0 : in.token_budget - other;
}

/// Cuts `len` to at most `room` tokens in total: every sequence keeps its first j drafts before any
/// keeps its (j+1)-th; at the level where the room runs out, smaller request ids keep theirs.
void cut_to_budget(std::span<const SeqDrafts> drafts, std::int64_t room, std::vector<std::int32_t>& len) {
    std::int64_t total = 0;
    std::array<std::int64_t, kMaxDraftTokens + 1> num_longer{};  // sequences with len > level
    for (const std::int32_t l : len) {
        total += l;
        for (std::int32_t j = 0; j < l; ++j) ++num_longer[static_cast<std::size_t>(j)];
    }
    if (total <= room) return;
    std::int32_t level = 0;
    std::int64_t used = 0;
    while (level < kMaxDraftTokens && used + num_longer[static_cast<std::size_t>(level)] <= room) {
        used += num_longer[static_cast<std::size_t>(level)];
        ++level;
    }
    std::vector<std::size_t> longer;
    for (std::size_t i = 0; i < len.size(); ++i)
        if (len[i] > level) longer.push_back(i);
    std::sort(longer.begin(), longer.end(),
              [&](std::size_t a, std::size_t b) { return drafts[a].request < drafts[b].request; });
    const std::int64_t extra = room - used;
    for (std::size_t r = 0; r < longer.size(); ++r)
        len[longer[r]] = static_cast<std::int64_t>(r) < extra ? level + 1 : level;
}

/// Fills expected tokens and time for lengths already in `out.verify_len`.
void finish_decision(const VerifyInput& in, const CostModel& cost, VerifyDecision& out) {
    out.num_verify_tokens = 0;
    out.expected_tokens = in.step.base_tokens;
    for (std::size_t i = 0; i < in.drafts.size(); ++i) {
        out.num_verify_tokens += out.verify_len[i];
        out.expected_tokens += expected_accepted_drafts(in.drafts[i], out.verify_len[i]);
    }
    out.step_time_s = cost.step_time_s(shape_with_verified(in.step, out.num_verify_tokens, cost.model()));
    out.num_time_evals = 1;
}

/// Stable LSD radix sort of `v` by its upper 32 bits (8 bits per pass; passes where every key shares
/// the byte are skipped).
void radix_sort_upper32(std::vector<std::uint64_t>& v, std::vector<std::uint64_t>& tmp) {
    tmp.resize(v.size());
    for (int shift = 32; shift < 64; shift += 8) {
        std::array<std::uint32_t, 257> count{};
        for (const std::uint64_t x : v) ++count[((x >> shift) & 0xFFU) + 1];
        if (v.empty() || count[((v[0] >> shift) & 0xFFU) + 1] == v.size()) continue;
        for (std::size_t b = 1; b < count.size(); ++b) count[b] += count[b - 1];
        for (const std::uint64_t x : v) tmp[count[(x >> shift) & 0xFFU]++] = x;
        v.swap(tmp);
    }
}

/// Below this many items std::sort beats the radix passes (each pays for 256 buckets). Measured with
/// gains drawn as in the simulator: even at 40 items, 2x faster at 120, 3x at 240.
constexpr std::size_t kRadixMinItems = 40;

constexpr std::uint64_t item_key(std::uint64_t item) { return item >> 32; }
constexpr std::size_t item_seq(std::uint64_t item) {
    return static_cast<std::size_t>((item & 0xFFFFFFFFU) >> 3);
}
constexpr std::int32_t item_pos(std::uint64_t item) { return static_cast<std::int32_t>(item & 7U); }
float item_gain(std::uint64_t item) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(~item_key(item)));
}

}  // namespace

double expected_accepted_drafts(const SeqDrafts& d, std::int32_t verify_len) {
    const std::int32_t n = std::clamp(std::min(verify_len, d.num_drafts), 0, kMaxDraftTokens);
    float p = 1.0F;
    double sum = 0;
    for (std::int32_t j = 0; j < n; ++j) {
        p *= clamp_confidence(d.confidence[static_cast<std::size_t>(j)]);
        sum += p;
    }
    return sum;
}

double distinct_local_experts(double num_experts, double pairs) {
    return distinct_local_experts(num_experts, pairs, std::log1p(-1.0 / num_experts));
}

double distinct_local_experts(double num_experts, double pairs, double log_keep) {
    // e · (1 − (1 − 1/e)^pairs), with the power as exp(pairs · log(1 − 1/e)): a caller that evaluates
    // many pair counts for one e computes the log once. (With e = 1 the log is −inf: no pairs, none.)
    if (!(pairs > 0)) return 0.0;
    return num_experts * -std::expm1(pairs * log_keep);
}

StepShape shape_with_verified(const VerifyStep& step, double num_verified, const ModelShape& model) {
    const double log_keep = step.num_local_experts > 0 ? std::log1p(-1.0 / step.num_local_experts) : 0.0;
    return shape_with_verified(step, num_verified, model, log_keep);
}

StepShape shape_with_verified(const VerifyStep& step, double num_verified, const ModelShape& model,
                              double log_keep) {
    StepShape s = step.other;
    const double t = std::max(0.0, num_verified);
    s.num_tokens = step.other.num_tokens + t;
    if (s.num_tokens > 0)
        s.mean_context =
            (step.other.mean_context * step.other.num_tokens + step.draft_context * t) / s.num_tokens;
    s.moe_tokens_per_rank = step.other.moe_tokens_per_rank + step.moe_pairs_per_token * t;
    // NOTE: distinct experts are recomputed from the pairs even at t = 0, so that time(T) comes from
    // one formula for every T (a caller's own estimate in `other` would make time(0) inconsistent).
    if (step.num_local_experts > 0) {
        s.moe_experts_per_rank =
            distinct_local_experts(step.num_local_experts, s.moe_tokens_per_rank, log_keep);
    } else if (model.top_k > 0) {
        s.moe_experts_per_rank =
            expected_distinct_experts(s.moe_tokens_per_rank / model.top_k, model.top_k, model.num_experts);
    }
    s.ep_tokens = step.other.ep_tokens + step.ep_tokens_per_token * t;
    return s;
}

VerifyStep make_decode_step(std::int32_t num_seqs, double context, const ModelShape& model) {
    const double n = num_seqs;
    VerifyStep v;
    v.other = StepShape{.num_tokens = n,
                        .num_seqs = n,
                        .num_sampled = n,
                        .mean_context = context,
                        .moe_tokens_per_rank = n * model.top_k,
                        .moe_experts_per_rank = expected_distinct_experts(n, model.top_k, model.num_experts),
                        .ep_tokens = 0};
    v.draft_context = context;
    v.moe_pairs_per_token = model.top_k;
    v.base_tokens = n;
    return v;
}

std::string_view name(VerifyPolicyKind k) {
    switch (k) {
        case VerifyPolicyKind::kFixed:
            return "fixed";
        case VerifyPolicyKind::kThreshold:
            return "threshold";
        case VerifyPolicyKind::kDynamic:
            return "dynamic";
    }
    return "unknown";
}

// ---- Fixed-k and threshold ------------------------------------------------------------------------

FixedVerify::FixedVerify(std::int32_t k) : k_(k) {}

void FixedVerify::operator()(const VerifyInput& in, const CostModel& cost, VerifyDecision& out) {
    out.verify_len.resize(in.drafts.size());
    for (std::size_t i = 0; i < in.drafts.size(); ++i) out.verify_len[i] = usable_drafts(in.drafts[i], k_);
    cut_to_budget(in.drafts, verify_room(in), out.verify_len);
    finish_decision(in, cost, out);
}

ThresholdVerify::ThresholdVerify(std::int32_t k, double threshold) : k_(k), threshold_(threshold) {}

void ThresholdVerify::operator()(const VerifyInput& in, const CostModel& cost, VerifyDecision& out) {
    out.verify_len.resize(in.drafts.size());
    for (std::size_t i = 0; i < in.drafts.size(); ++i) {
        const SeqDrafts& d = in.drafts[i];
        const std::int32_t k = usable_drafts(d, k_);
        float p = 1.0F;
        std::int32_t len = 0;
        while (len < k) {
            p *= clamp_confidence(d.confidence[static_cast<std::size_t>(len)]);
            if (!(p > 0.0F) || p < threshold_) break;
            ++len;
        }
        out.verify_len[i] = len;
    }
    cut_to_budget(in.drafts, verify_room(in), out.verify_len);
    finish_decision(in, cost, out);
}

// ---- Dynamic ----------------------------------------------------------------------------------------

DynamicVerify::DynamicVerify(std::int32_t k, bool exhaustive, double optimality_gap,
                             std::int32_t max_time_evals)
    : k_(k), exhaustive_(exhaustive), optimality_gap_(optimality_gap), max_time_evals_(max_time_evals) {}

void DynamicVerify::operator()(const VerifyInput& in, const CostModel& cost, VerifyDecision& out) {
    DI_CHECK(in.drafts.size() < (std::size_t{1} << 29), "too many sequences: " << in.drafts.size());
    // Items: (inverted float bits of the gain, sequence index, draft position). Inverting the bits
    // of a non-negative float turns "descending gain" into "ascending key".
    items_.clear();
    for (std::size_t i = 0; i < in.drafts.size(); ++i) {
        const SeqDrafts& d = in.drafts[i];
        const std::int32_t k = usable_drafts(d, k_);
        float p = 1.0F;
        for (std::int32_t j = 0; j < k; ++j) {
            p *= clamp_confidence(d.confidence[static_cast<std::size_t>(j)]);
            if (!(p > 0.0F)) break;  // a zero gain only costs time
            const std::uint64_t key = ~std::bit_cast<std::uint32_t>(p);
            items_.push_back(key << 32 | static_cast<std::uint64_t>(i) << 3 | static_cast<std::uint64_t>(j));
        }
    }
    // The low 32 bits (sequence, position) increase in push order, so the stable sort by the upper
    // 32 bits is the plain sort of the whole items: small inputs skip the radix passes' fixed cost.
    if (items_.size() < kRadixMinItems)
        std::sort(items_.begin(), items_.end());
    else
        radix_sort_upper32(items_, tmp_);
    gain_prefix_.resize(items_.size() + 1);
    gain_prefix_[0] = 0;
    for (std::size_t t = 0; t < items_.size(); ++t)
        gain_prefix_[t + 1] = gain_prefix_[t] + item_gain(items_[t]);

    const auto t_max = static_cast<std::int32_t>(std::min<std::int64_t>(verify_room(in), std::ssize(items_)));
    out.num_time_evals = 0;
    const std::int32_t total = choose_total(in, cost, t_max, out);
    assign_lengths(in, total, out);
    out.num_verify_tokens = total;
    out.expected_tokens = in.step.base_tokens + gain_prefix_[static_cast<std::size_t>(total)];
    out.step_time_s = time_s_[static_cast<std::size_t>(total)];
}

std::int32_t DynamicVerify::choose_total(const VerifyInput& in, const CostModel& cost, std::int32_t t_max,
                                         VerifyDecision& out) {
    time_s_.assign(static_cast<std::size_t>(t_max) + 1, -1.0);
    const double log_keep =
        in.step.num_local_experts > 0 ? std::log1p(-1.0 / in.step.num_local_experts) : 0.0;
    auto time_at = [&](std::int32_t t) {
        double& slot = time_s_[static_cast<std::size_t>(t)];
        if (slot < 0) {
            slot = cost.step_time_s(shape_with_verified(in.step, t, cost.model(), log_keep));
            DI_CHECK(slot > 0, "predicted step time " << slot << " s for " << t << " verified tokens");
            ++out.num_time_evals;
        }
        return slot;
    };
    const double base = in.step.base_tokens;
    auto ratio = [&](std::int32_t t) {
        return (base + gain_prefix_[static_cast<std::size_t>(t)]) / time_at(t);
    };

    std::int32_t best_t = 0;
    double best = ratio(0);
    auto consider = [&](std::int32_t t) {
        const double r = ratio(t);
        if (r > best || (r == best && t < best_t)) {
            best = r;
            best_t = t;
        }
    };
    if (exhaustive_) {
        for (std::int32_t t = 1; t <= t_max; ++t) consider(t);
        return best_t;
    }
    out.optimality_gap_bound = 0;
    if (t_max == 0) return 0;
    consider(t_max);
    // Best-first branch and bound over intervals (a, b) of T with time(a), time(b) known: for T
    // strictly inside, time(T) >= time(a) and G(T) <= G(b-1), which bounds the ratio.
    const double slack = 1.0 + optimality_gap_;
    double open_bound = 0;  // largest bound among intervals dropped without proof
    auto discard = [&](const Interval& v) {
        if (v.b - v.a <= 1 || v.bound < best || (v.bound == best && v.a + 1 >= best_t)) return true;
        if (v.bound >= best * slack) return false;
        open_bound = std::max(open_bound, v.bound);
        return true;
    };
    auto push = [&](std::int32_t a, std::int32_t b) {
        if (b - a <= 1) return;
        const Interval v{(base + gain_prefix_[static_cast<std::size_t>(b - 1)]) / time_at(a), a, b};
        if (discard(v)) return;
        heap_.push_back(v);
        std::push_heap(heap_.begin(), heap_.end());
    };
    heap_.clear();
    push(0, t_max);
    while (!heap_.empty()) {
        std::pop_heap(heap_.begin(), heap_.end());
        const Interval v = heap_.back();
        heap_.pop_back();
        if (discard(v)) continue;
        if (out.num_time_evals >= max_time_evals_) {
            open_bound = std::max(open_bound, v.bound);
            continue;
        }
        const std::int32_t m = v.a + (v.b - v.a) / 2;
        consider(m);
        push(v.a, m);
        push(m, v.b);
    }
    out.optimality_gap_bound = std::max(0.0, open_bound / best - 1.0);
    return best_t;
}

void DynamicVerify::assign_lengths(const VerifyInput& in, std::int32_t total, VerifyDecision& out) {
    out.verify_len.assign(in.drafts.size(), 0);
    if (total == 0) return;
    const auto n = static_cast<std::size_t>(total);
    // Equal gains straddling the cut: verify smaller request ids first, then earlier drafts.
    std::size_t lo = n;
    const std::uint64_t cut_key = item_key(items_[n - 1]);
    if (n < items_.size() && item_key(items_[n]) == cut_key) {
        lo = n - 1;
        while (lo > 0 && item_key(items_[lo - 1]) == cut_key) --lo;
        std::size_t hi = n;
        while (hi < items_.size() && item_key(items_[hi]) == cut_key) ++hi;
        tie_.assign(items_.begin() + static_cast<std::ptrdiff_t>(lo),
                    items_.begin() + static_cast<std::ptrdiff_t>(hi));
        std::sort(tie_.begin(), tie_.end(), [&](std::uint64_t x, std::uint64_t y) {
            const RequestId rx = in.drafts[item_seq(x)].request;
            const RequestId ry = in.drafts[item_seq(y)].request;
            if (rx != ry) return rx < ry;
            if (item_seq(x) != item_seq(y)) return item_seq(x) < item_seq(y);
            return item_pos(x) < item_pos(y);
        });
        for (std::size_t t = 0; t < n - lo; ++t) ++out.verify_len[item_seq(tie_[t])];
    }
    for (std::size_t t = 0; t < lo; ++t) ++out.verify_len[item_seq(items_[t])];
}

// ---- Variant ----------------------------------------------------------------------------------------

VerifyPolicy make_verify_policy(const VerifyPolicyConfig& c) {
    if (c.max_draft_tokens < 1 || c.max_draft_tokens > kMaxDraftTokens)
        throw ConfigError("verify_policy", "/max_draft_tokens", "an integer in 1..7",
                          std::to_string(c.max_draft_tokens));
    if (!(c.threshold >= 0.0 && c.threshold <= 1.0))
        throw ConfigError("verify_policy", "/threshold", "a number in [0, 1]", std::to_string(c.threshold));
    if (c.max_time_evals < 2)
        throw ConfigError("verify_policy", "/max_time_evals", "an integer >= 2",
                          std::to_string(c.max_time_evals));
    if (!(c.optimality_gap >= 0.0 && c.optimality_gap <= 1.0))
        throw ConfigError("verify_policy", "/optimality_gap", "a number in [0, 1]",
                          std::to_string(c.optimality_gap));
    switch (c.kind) {
        case VerifyPolicyKind::kFixed:
            return FixedVerify(c.max_draft_tokens);
        case VerifyPolicyKind::kThreshold:
            return ThresholdVerify(c.max_draft_tokens, c.threshold);
        case VerifyPolicyKind::kDynamic:
            return DynamicVerify(c.max_draft_tokens, c.exhaustive, c.optimality_gap, c.max_time_evals);
    }
    detail::throw_internal(__FILE__, __LINE__, "kind", "unknown verify policy kind");
}

void choose_verify(VerifyPolicy& policy, const VerifyInput& in, const CostModel& cost, VerifyDecision& out) {
    std::visit([&](auto& p) { p(in, cost, out); }, policy);
}

}  // namespace deepinfer
