// The offline API in the shape of vLLM's: LLM(model).generate(prompts, SamplingParams) running the
// CPU reference executor through engine::Instance and the full Scheduler (chunked prefill, decode,
// KV block accounting, MTP speculative decoding with a DSpark verify policy).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/cpu/cpu_executor.h"
#include "policies/cost/cost_model.h"
#include "policies/dspark/verify_policy.h"
#include "policies/kv/kv_model_shape.h"
#include "policies/scheduler/step_scheduler.h"
#include "policies/scheduler/verify_length_policy.h"

namespace deepinfer::cpu {

struct LLMConfig {
    /// Model directory (config.json + safetensors) or a config file beside a checkpoint.
    std::string model;
    /// Scheduler token budget per step (prompt chunks are at most this long).
    std::int32_t max_num_batched_tokens = 512;
    std::int32_t max_num_seqs = 16;
    /// Drafts proposed per step by the MTP block (0 = off; 1..7, needs MTP weights).
    std::int32_t num_speculative_tokens = 0;
    /// Seed for sequences whose SamplingParams have none.
    std::uint64_t seed = 0;
    /// Plan step N+1 before committing step N (the Instance's async loop).
    bool async_scheduling = true;
    /// Builds the scheduler; empty = the full Scheduler configured from the fields below.
    std::function<std::unique_ptr<StepScheduler>(const LLMConfig&)> make_scheduler;
    /// Bytes the Scheduler's KV block pool accounts, with this model's fp32 cache sizes (compressed
    /// entries per 128-token block, sliding windows and compressor buffers per sequence). The CPU
    /// executor keeps its own unpaged caches; the pool decides how many sequences and tokens are
    /// admitted at once (and preempts when they outgrow it). 1 GiB holds ~64 K tokens of V4-Flash in
    /// fp32 and millions for the tiny test models.
    double kv_cache_bytes = 1024.0 * 1024 * 1024;
    /// How many MTP drafts each step verifies (with num_speculative_tokens > 0): kFixed verifies all,
    /// kThreshold those whose cumulative confidence reaches verify_threshold, kDynamic maximises
    /// expected tokens per second of predicted step time on the cost model (DSpark).
    VerifyPolicyKind verify_policy = VerifyPolicyKind::kFixed;
    double verify_threshold = 0.5;
    /// Profile directory (profiles/SCHEMA.md, e.g. profiles/h200-roofline) for the dynamic policy's
    /// CostModel. Empty: kDynamic falls back to kFixed and LLM::notes() says so.
    std::string cost_profile_dir;
};

/// The attention-cache shape of `config` stored in fp32 (the CPU reference's caches): SWA/CSA/HCA
/// layer counts, the first CSA and HCA layers' compression rates, the window, head and indexer
/// widths; `num_mtp_layers` MTP layers.
KvModelShape kv_model_shape_of(const model::ModelConfig& config, std::int32_t num_mtp_layers);
/// The layer counts a CostModel composes for `config`.
ModelShape cost_model_shape_of(const model::ModelConfig& config);

struct RequestOutput {
    RequestId request_id{0};
    std::vector<std::int32_t> prompt_token_ids;
    std::vector<std::int32_t> token_ids;
    /// "length", "stop", "rejected" or "aborted".
    std::string finish_reason;
    /// With SamplingParams::return_logits: [prompt_len, vocab] and [num tokens, vocab] row-major
    /// (step row j = the logits that produced token j; row 0 = the last prompt position's).
    std::vector<float> prompt_logits;
    std::vector<float> step_logits;
    std::int64_t num_drafts_proposed = 0;
    std::int64_t num_drafts_verified = 0;
    std::int64_t num_drafts_accepted = 0;
};

class LLM {
public:
    /// Loads config and weights from `config.model`. Throws ConfigError / CheckpointError.
    explicit LLM(LLMConfig config);
    /// Uses an already-loaded model (tests, several LLMs over one model).
    LLM(std::shared_ptr<const V4Model> model, LLMConfig config);

    /// Generates for every prompt; outputs are in prompt order.
    std::vector<RequestOutput> generate(const std::vector<std::vector<std::int32_t>>& prompts,
                                        const SamplingParams& params = {});
    /// One SamplingParams per prompt.
    std::vector<RequestOutput> generate(const std::vector<std::vector<std::int32_t>>& prompts,
                                        const std::vector<SamplingParams>& params);

    const model::ModelConfig& model_config() const { return model_->config(); }
    const V4Model& model() const { return *model_; }
    /// The verify policy generate() uses (after any fallback; meaningless without speculation).
    VerifyPolicyKind verify_policy() const { return verify_kind_; }
    /// Choices the LLM made on the caller's behalf (fallbacks, disabled features), one line each.
    const std::vector<std::string>& notes() const { return notes_; }

private:
    std::unique_ptr<StepScheduler> make_default_scheduler(std::unique_ptr<VerifyLengthPolicy>& verify) const;

    std::shared_ptr<const V4Model> model_;
    LLMConfig config_;
    VerifyPolicyKind verify_kind_ = VerifyPolicyKind::kFixed;
    std::optional<CostModel> cost_;
    std::vector<std::string> notes_;
    std::int64_t next_request_ = 0;
};

/// Loads a V4 model for the CPU reference from a directory (config.json or config.upstream.json
/// plus model.safetensors or a sharded index).
std::shared_ptr<V4Model> load_v4_model(const std::string& dir);

}  // namespace deepinfer::cpu
