// LLM: the offline generate() loop over engine::Instance with the CPU reference executor.
#include "engine/cpu/llm.h"

#include <filesystem>
#include <map>

#include "engine/core/clock.h"
#include "engine/core/instance.h"
#include "engine/model/checkpoint.h"
#include "policies/common/check.h"
#include "policies/cost/profile.h"
#include "policies/dspark/dspark_verify_adapter.h"
#include "policies/scheduler/scheduler.h"

namespace deepinfer::cpu {

std::shared_ptr<V4Model> load_v4_model(const std::string& dir) {
    namespace fs = std::filesystem;
    model::ModelConfig config = model::load_model_config(dir);
    const std::string ckpt_path = fs::is_directory(dir) ? dir : fs::path(dir).parent_path().string();
    const model::Checkpoint ckpt = model::Checkpoint::open(ckpt_path);
    model::ModelWeights weights = model::load_model_weights(ckpt, config);
    return std::make_shared<V4Model>(std::move(config), std::move(weights));
}

KvModelShape kv_model_shape_of(const model::ModelConfig& config, std::int32_t num_mtp_layers) {
    KvModelShape k;
    k.num_swa_layers = k.num_csa_layers = k.num_hca_layers = 0;
    std::int64_t csa_rate = 0, hca_rate = 0;
    for (std::size_t l = 0; l < config.layer_types.size(); ++l) {
        const std::int64_t rate = config.compress_ratios.at(l);
        switch (config.layer_types[l]) {
            case model::AttentionType::kSliding:
                ++k.num_swa_layers;
                break;
            case model::AttentionType::kCsa:
                ++k.num_csa_layers;
                if (csa_rate == 0) csa_rate = rate;
                break;
            case model::AttentionType::kHca:
                ++k.num_hca_layers;
                if (hca_rate == 0) hca_rate = rate;
                break;
        }
    }
    k.num_mtp_layers = num_mtp_layers;
    k.head_dim = static_cast<std::int32_t>(config.head_dim);
    k.index_head_dim = static_cast<std::int32_t>(config.index_head_dim);
    if (csa_rate > 0) k.csa_compress_rate = static_cast<std::int32_t>(csa_rate);
    if (hca_rate > 0) k.hca_compress_rate = static_cast<std::int32_t>(hca_rate);
    k.sliding_window_tokens = static_cast<std::int32_t>(config.sliding_window);
    k.dtype_bytes = 4;  // the CPU reference keeps fp32 caches
    return k;
}

ModelShape cost_model_shape_of(const model::ModelConfig& config) {
    const KvModelShape k = kv_model_shape_of(config, 0);
    return ModelShape{.num_swa_layers = k.num_swa_layers,
                      .num_csa_layers = k.num_csa_layers,
                      .num_hca_layers = k.num_hca_layers,
                      .num_moe_layers = static_cast<std::int32_t>(config.num_layers),
                      .num_experts = static_cast<std::int32_t>(config.n_routed_experts),
                      .top_k = static_cast<std::int32_t>(config.num_experts_per_tok)};
}

LLM::LLM(LLMConfig config) : LLM(load_v4_model(config.model), config) {}

LLM::LLM(std::shared_ptr<const V4Model> model, LLMConfig config)
    : model_(std::move(model)), config_(std::move(config)) {
    if (config_.max_num_batched_tokens < 1)
        throw ConfigError("LLMConfig", "/max_num_batched_tokens", "a positive integer",
                          std::to_string(config_.max_num_batched_tokens));
    if (config_.num_speculative_tokens < 0 || config_.num_speculative_tokens > kMaxDraftTokens)
        throw ConfigError("LLMConfig", "/num_speculative_tokens",
                          "an integer in 0.." + std::to_string(kMaxDraftTokens),
                          std::to_string(config_.num_speculative_tokens));
    if (config_.max_num_seqs < 1)
        throw ConfigError("LLMConfig", "/max_num_seqs", "a positive integer",
                          std::to_string(config_.max_num_seqs));
    if (!(config_.kv_cache_bytes > 0))
        throw ConfigError("LLMConfig", "/kv_cache_bytes", "a positive number",
                          std::to_string(config_.kv_cache_bytes));
    if (!(config_.verify_threshold >= 0 && config_.verify_threshold <= 1))
        throw ConfigError("LLMConfig", "/verify_threshold", "a number in [0, 1]",
                          std::to_string(config_.verify_threshold));
    verify_kind_ = config_.verify_policy;
    if (config_.num_speculative_tokens == 0) return;
    if (!config_.cost_profile_dir.empty())
        cost_.emplace(load_profile_dir(config_.cost_profile_dir), cost_model_shape_of(model_->config()));
    if (verify_kind_ == VerifyPolicyKind::kDynamic && !cost_) {
        verify_kind_ = VerifyPolicyKind::kFixed;
        notes_.push_back(
            "verify policy: dynamic needs a cost model (LLMConfig::cost_profile_dir / --cost-profile); "
            "falling back to fixed (verify every draft)");
    }
}

std::unique_ptr<StepScheduler> LLM::make_default_scheduler(
    std::unique_ptr<VerifyLengthPolicy>& verify) const {
    SchedulerConfig sc;
    sc.max_num_batched_tokens = config_.max_num_batched_tokens;
    sc.max_num_seqs = config_.max_num_seqs;
    sc.num_speculative_tokens = config_.num_speculative_tokens;
    sc.kv.capacity_bytes = config_.kv_cache_bytes;
    sc.kv.shape = kv_model_shape_of(model_->config(), config_.num_speculative_tokens > 0 ? 1 : 0);
    // NOTE: prefix caching is off on the CPU path. The CPU executor keeps one private, unpaged cache
    // per sequence (V4Model's SeqCache, with rings that only roll back a few tokens), so it cannot
    // start a sequence from blocks another sequence computed: a prefix hit would plan
    // num_computed_tokens > 0 for a sequence whose cache is empty. The CUDA executor's paged caches
    // are what the prefix cache is for.
    sc.prefix_cache.enabled = false;
    if (config_.num_speculative_tokens > 0) {
        DsparkAdapterConfig ac;
        ac.policy.kind = verify_kind_;
        ac.policy.max_draft_tokens = config_.num_speculative_tokens;
        ac.policy.threshold = config_.verify_threshold;
        verify = std::make_unique<DsparkVerifyAdapter>(ac, cost_);
    }
    return std::make_unique<Scheduler>(sc, verify.get());
}

std::vector<RequestOutput> LLM::generate(const std::vector<std::vector<std::int32_t>>& prompts,
                                         const SamplingParams& params) {
    return generate(prompts, std::vector<SamplingParams>(prompts.size(), params));
}

std::vector<RequestOutput> LLM::generate(const std::vector<std::vector<std::int32_t>>& prompts,
                                         const std::vector<SamplingParams>& params) {
    if (params.size() != prompts.size())
        throw InputError("generate", "/sampling_params",
                         std::to_string(prompts.size()) + " entries (one per prompt)",
                         std::to_string(params.size()));
    CpuExecutor executor(
        model_, CpuExecutorConfig{.max_draft_tokens = config_.num_speculative_tokens, .seed = config_.seed});
    std::unique_ptr<VerifyLengthPolicy> verify;  // outlives the scheduler that points at it
    std::unique_ptr<StepScheduler> scheduler =
        config_.make_scheduler ? config_.make_scheduler(config_) : make_default_scheduler(verify);
    std::map<RequestId, FinishedRequest> finished;
    engine::InstanceHooks hooks;
    hooks.on_finished = [&](const FinishedRequest& f, double) { finished[f.request] = f; };
    engine::SteadyClock clock;
    engine::Instance instance("llm", executor, clock, *scheduler, nullptr,
                              engine::InstanceConfig{.async_scheduling = config_.async_scheduling},
                              std::move(hooks));
    std::vector<RequestId> ids;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        const RequestId id(next_request_++);
        ids.push_back(id);
        executor.add_sequence(id, prompts[i], params[i]);
        Request r;
        r.id = id;
        r.prompt_token_ids = prompts[i];
        r.prompt_len_tokens = static_cast<std::int32_t>(prompts[i].size());
        r.max_new_tokens = params[i].max_tokens;
        instance.add_request(std::move(r));
    }
    instance.run_until_idle();
    std::vector<RequestOutput> outputs;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        RequestOutput out;
        out.request_id = ids[i];
        out.prompt_token_ids = prompts[i];
        auto f = finished.find(ids[i]);
        DI_CHECK(f != finished.end(), "request " << ids[i] << " never finished");
        out.finish_reason = std::string(name(f->second.reason));
        out.token_ids = f->second.output_token_ids;
        SequenceRecord rec = executor.take_record(ids[i]);
        out.prompt_logits = std::move(rec.prompt_logits);
        // The executor may have sampled past the scheduler's stop (async placeholder steps): keep
        // the rows of the tokens the request actually returns.
        const auto V = static_cast<std::size_t>(model_->config().vocab_size);
        rec.step_logits.resize(std::min(rec.step_logits.size(), out.token_ids.size() * V));
        out.step_logits = std::move(rec.step_logits);
        out.num_drafts_proposed = rec.num_drafts_proposed;
        out.num_drafts_verified = rec.num_drafts_verified;
        out.num_drafts_accepted = rec.num_drafts_accepted;
        outputs.push_back(std::move(out));
    }
    return outputs;
}

}  // namespace deepinfer::cpu
