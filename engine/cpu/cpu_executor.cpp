// CpuExecutor: plan execution, sampling, draft verification with rollback, MTP drafting.
#include "engine/cpu/cpu_executor.h"

#include <algorithm>
#include <cmath>

#include "policies/common/check.h"
#include "policies/common/rng.h"

namespace deepinfer::cpu {

CpuExecutor::CpuExecutor(std::shared_ptr<const V4Model> model, CpuExecutorConfig config)
    : model_(std::move(model)), config_(config) {
    DI_CHECK(model_ != nullptr, "CpuExecutor without a model");
    DI_CHECK(config_.max_draft_tokens >= 0, "max_draft_tokens " << config_.max_draft_tokens);
    if (config_.max_draft_tokens > 0 && !model_->has_mtp())
        throw ConfigError("CpuExecutor", "/max_draft_tokens", "0 for a model without MTP weights",
                          std::to_string(config_.max_draft_tokens));
}

engine::ExecutorCaps CpuExecutor::caps() const {
    return engine::ExecutorCaps{.supports_chunked_prefill = true,
                                .max_batch_tokens = 0,
                                .supports_mtp = config_.max_draft_tokens > 0,
                                .max_draft_tokens = config_.max_draft_tokens,
                                .supports_expert_placement = false,
                                .reports_expert_load = false};
}

void CpuExecutor::add_sequence(RequestId id, std::vector<std::int32_t> prompt, SamplingParams sampling) {
    DI_CHECK(seqs_.count(id) == 0 && finished_records_.count(id) == 0, "sequence " << id << " added twice");
    for (std::int32_t t : prompt)
        if (t < 0 || t >= model_->config().vocab_size)
            throw InputError("prompt", "/prompt_token_ids",
                             "ids in [0, " + std::to_string(model_->config().vocab_size) + ")",
                             std::to_string(t));
    Seq q;
    q.seed =
        sampling.seed ? *sampling.seed : mix64(config_.seed ^ mix64(static_cast<std::uint64_t>(id.value())));
    q.sampling = std::move(sampling);
    q.cache = model_->new_cache(config_.max_draft_tokens + 1);
    q.tokens = prompt;
    q.record.prompt = std::move(prompt);
    seqs_.emplace(id, std::move(q));
}

const SequenceRecord& CpuExecutor::record(RequestId id) const {
    if (auto it = seqs_.find(id); it != seqs_.end()) return it->second.record;
    auto it = finished_records_.find(id);
    DI_CHECK(it != finished_records_.end(), "no record for request " << id);
    return it->second;
}

void CpuExecutor::set_drafts(RequestId id, std::vector<std::int32_t> drafts) {
    auto it = seqs_.find(id);
    DI_CHECK(it != seqs_.end(), "set_drafts for unknown request " << id);
    it->second.drafts = std::move(drafts);
}

SequenceRecord CpuExecutor::take_record(RequestId id) {
    SequenceRecord r = record(id);
    finished_records_.erase(id);
    return r;
}

engine::StepTicket CpuExecutor::launch(const StepPlan& plan) {
    const engine::StepTicket ticket{next_ticket_++};
    queued_.emplace_back(ticket, plan);
    return ticket;
}

StepOutcome CpuExecutor::wait(engine::StepTicket ticket) {
    DI_CHECK(!queued_.empty() && queued_.front().first.id == ticket.id,
             "tickets must be waited in launch order");
    const StepPlan plan = std::move(queued_.front().second);
    queued_.pop_front();
    for (RequestId r : plan.released) {
        if (auto it = seqs_.find(r); it != seqs_.end()) {
            finished_records_[r] = std::move(it->second.record);
            seqs_.erase(it);
        }
    }
    for (RequestId r : plan.preempted)
        if (auto it = seqs_.find(r); it != seqs_.end())
            it->second.cache = model_->new_cache(config_.max_draft_tokens + 1);
    StepOutcome outcome;
    outcome.step_id = plan.step_id;
    for (const SeqSchedule& s : plan.seqs) outcome.seqs.push_back(run_seq(s));
    return outcome;
}

bool CpuExecutor::is_stop(const Seq& q, std::int32_t token) const {
    const auto& stop = q.sampling.stop_token_ids;
    if (std::find(stop.begin(), stop.end(), token) != stop.end()) return true;
    const auto& eos = model_->config().eos_token_ids;
    return !q.sampling.ignore_eos && std::find(eos.begin(), eos.end(), token) != eos.end();
}

SeqOutcome CpuExecutor::run_seq(const SeqSchedule& s) {
    auto it = seqs_.find(s.request);
    DI_CHECK(it != seqs_.end(),
             "plan names request " << s.request << ", which was never added to the executor");
    Seq& q = it->second;
    const std::int64_t c = s.num_computed_tokens, n = s.num_new_tokens, k = s.num_verify_tokens;
    DI_CHECK(n >= 1 && k >= 0 && k < n,
             "request " << s.request << ": num_new_tokens=" << n << " num_verify_tokens=" << k);
    if (s.is_new && c > 0 && q.cache.length == 0)
        throw ConfigError("CpuExecutor", "/prefix_cache/enabled",
                          "false (the CPU reference keeps one private cache per sequence and cannot "
                          "resume from another sequence's blocks)",
                          "a plan that starts request " + std::to_string(s.request.value()) + " at token " +
                              std::to_string(c));
    // The plan's num_computed_tokens is the truth: roll back (or restart) to it.
    if (q.cache.length > c) {
        if (c == 0)
            q.cache = model_->new_cache(config_.max_draft_tokens + 1);
        else
            q.cache.truncate(c);
    }
    DI_CHECK(q.cache.length == c,
             "request " << s.request << ": plan starts at " << c << ", cache holds " << q.cache.length);
    std::vector<std::int32_t> input;
    for (std::int64_t p = c; p < c + n - k; ++p) {
        DI_CHECK(p < static_cast<std::int64_t>(q.tokens.size()),
                 "request " << s.request << ": no token at position " << p);
        input.push_back(q.tokens[static_cast<std::size_t>(p)]);
    }
    DI_CHECK(k <= static_cast<std::int64_t>(q.drafts.size()),
             "request " << s.request << ": verifying " << k << " drafts, " << q.drafts.size() << " proposed");
    input.insert(input.end(), q.drafts.begin(), q.drafts.begin() + k);
    q.record.num_drafts_verified += k;

    const auto prompt_len = static_cast<std::int64_t>(q.record.prompt.size());
    const bool prompt_rows = q.sampling.return_logits && c < prompt_len;
    const ForwardOutput out = model_->forward(q.cache, input, prompt_rows || k > 0);
    if (prompt_rows) {
        const std::int64_t V = model_->config().vocab_size;
        q.record.prompt_logits.resize(static_cast<std::size_t>(prompt_len * V));
        for (std::int64_t r = 0; r < n && c + r < prompt_len; ++r)
            std::copy(out.logits.row(r).data(), out.logits.row(r).data() + V,
                      q.record.prompt_logits.begin() + static_cast<std::ptrdiff_t>((c + r) * V));
    }
    SeqOutcome o{.request = s.request};
    if (s.samples) {
        DI_CHECK(c + n - k == static_cast<std::int64_t>(q.tokens.size()),
                 "request " << s.request << ": sampling position " << (c + n - k) << " but "
                            << q.tokens.size() << " tokens known");
        const std::int32_t accepted = sample_outputs(q, s, out, o);
        const std::int64_t new_length = c + (n - k) + accepted;
        if (q.cache.length > new_length) q.cache.truncate(new_length);  // roll back rejected drafts
    }
    q.drafts.clear();
    update_mtp_and_draft(q, s, out, o);
    return o;
}

std::int32_t CpuExecutor::sample_outputs(Seq& q, const SeqSchedule& s, const ForwardOutput& out,
                                         SeqOutcome& o) {
    const std::int64_t c = s.num_computed_tokens, n = s.num_new_tokens, k = s.num_verify_tokens;
    const std::int64_t V = model_->config().vocab_size;
    const std::int64_t first_row = out.logits.rows() - (k + 1);
    std::int32_t accepted = 0;
    for (std::int64_t j = 0; j <= k; ++j) {
        const float* row = out.logits.row(first_row + j).data();
        // The draw of each output position depends only on the seed and the position, so
        // speculation never changes which token a position samples.
        const std::int32_t tok =
            sample_token({row, static_cast<std::size_t>(V)}, q.sampling, q.seed, c + n - k + j);
        o.token_ids.push_back(tok);
        if (q.sampling.return_logits) q.record.step_logits.insert(q.record.step_logits.end(), row, row + V);
        const bool accept = j < k && tok == q.drafts[static_cast<std::size_t>(j)];
        if (accept) ++accepted;
        if (is_stop(q, tok)) {
            o.hit_stop = true;
            break;
        }
        if (!accept) break;
    }
    o.num_sampled = static_cast<std::int32_t>(o.token_ids.size());
    o.num_accepted_drafts = accepted;
    q.tokens.insert(q.tokens.end(), o.token_ids.begin(), o.token_ids.end());
    q.record.outputs.insert(q.record.outputs.end(), o.token_ids.begin(), o.token_ids.end());
    q.record.num_drafts_accepted += accepted;
    return accepted;
}

void CpuExecutor::update_mtp_and_draft(Seq& q, const SeqSchedule& s, const ForwardOutput& out,
                                       SeqOutcome& o) {
    if (config_.max_draft_tokens == 0) return;
    const std::int64_t c = s.num_computed_tokens;
    const std::int64_t from = q.cache.mtp_length;
    const std::int64_t to =
        std::min<std::int64_t>(q.cache.length, static_cast<std::int64_t>(q.tokens.size()) - 1);
    DI_CHECK(from >= c,
             "request " << s.request << ": MTP state at " << from << " is behind the step start " << c);
    if (to <= from) return;
    const RowMat h = out.streams.middleRows(from - c, to - from);
    const std::vector<std::int32_t> next(q.tokens.begin() + from + 1, q.tokens.begin() + to + 1);
    ForwardOutput m = model_->mtp_forward(q.cache, h, next);
    const std::int32_t d = std::min(s.num_drafts_to_propose, config_.max_draft_tokens);
    if (!s.samples || o.hit_stop || d <= 0 || to != q.cache.length) return;
    // Draft i+1 chains the MTP block on its own output streams and draft i (positions past the
    // main model's are provisional and dropped again below).
    for (std::int32_t i = 0; i < d; ++i) {
        const Eigen::Index last = m.logits.rows() - 1;
        const std::span<const float> row(m.logits.row(last).data(),
                                         static_cast<std::size_t>(m.logits.cols()));
        const std::int32_t tok = argmax(row);
        double denom = 0.0;
        for (float v : row) denom += std::exp(static_cast<double>(v) - row[static_cast<std::size_t>(tok)]);
        q.drafts.push_back(tok);
        o.draft_token_ids.push_back(tok);
        o.draft_confidences.push_back(static_cast<float>(1.0 / denom));
        if (i + 1 < d) {
            const RowMat hs = m.streams.bottomRows(1);
            m = model_->mtp_forward(q.cache, hs, std::span<const std::int32_t>(&q.drafts.back(), 1));
        }
    }
    q.cache.truncate_mtp(q.cache.length);
    q.record.num_drafts_proposed += d;
}

}  // namespace deepinfer::cpu
