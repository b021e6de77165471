// The offline API in the shape of vLLM's: LLM(model).generate(prompts, SamplingParams) running the
// CPU reference executor through engine::Instance and a StepScheduler (chunked prefill, decode,
// optional MTP drafting).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/cpu/cpu_executor.h"
#include "policies/scheduler/step_scheduler.h"

namespace deepinfer::cpu {

struct LLMConfig {
    /// Model directory (config.json + safetensors) or a config file beside a checkpoint.
    std::string model;
    /// Scheduler token budget per step (prompt chunks are at most this long).
    std::int32_t max_num_batched_tokens = 512;
    std::int32_t max_num_seqs = 16;
    /// Drafts proposed per step by the MTP block (0 = off; needs MTP weights).
    std::int32_t num_speculative_tokens = 0;
    /// Seed for sequences whose SamplingParams have none.
    std::uint64_t seed = 0;
    /// Plan step N+1 before committing step N (the Instance's async loop).
    bool async_scheduling = true;
    /// Builds the scheduler; empty = SimpleScheduler with the budget above.
    std::function<std::unique_ptr<StepScheduler>(const LLMConfig&)> make_scheduler;
};

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

private:
    std::shared_ptr<const V4Model> model_;
    LLMConfig config_;
    std::int64_t next_request_ = 0;
};

/// Loads a V4 model for the CPU reference from a directory (config.json or config.upstream.json
/// plus model.safetensors or a sharded index).
std::shared_ptr<V4Model> load_v4_model(const std::string& dir);

}  // namespace deepinfer::cpu
