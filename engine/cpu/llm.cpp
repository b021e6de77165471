// LLM: the offline generate() loop over engine::Instance with the CPU reference executor.
#include "engine/cpu/llm.h"

#include <filesystem>
#include <map>

#include "engine/core/clock.h"
#include "engine/core/instance.h"
#include "engine/model/checkpoint.h"
#include "policies/common/check.h"
#include "policies/scheduler/simple_scheduler.h"

namespace deepinfer::cpu {

std::shared_ptr<V4Model> load_v4_model(const std::string& dir) {
    namespace fs = std::filesystem;
    model::ModelConfig config = model::load_model_config(dir);
    const std::string ckpt_path = fs::is_directory(dir) ? dir : fs::path(dir).parent_path().string();
    const model::Checkpoint ckpt = model::Checkpoint::open(ckpt_path);
    model::ModelWeights weights = model::load_model_weights(ckpt, config);
    return std::make_shared<V4Model>(std::move(config), std::move(weights));
}

LLM::LLM(LLMConfig config) : LLM(load_v4_model(config.model), config) {}

LLM::LLM(std::shared_ptr<const V4Model> model, LLMConfig config)
    : model_(std::move(model)), config_(std::move(config)) {
    if (config_.max_num_batched_tokens < 1)
        throw ConfigError("LLMConfig", "/max_num_batched_tokens", "a positive integer",
                          std::to_string(config_.max_num_batched_tokens));
    if (config_.num_speculative_tokens < 0)
        throw ConfigError("LLMConfig", "/num_speculative_tokens", "a non-negative integer",
                          std::to_string(config_.num_speculative_tokens));
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
    std::unique_ptr<StepScheduler> scheduler =
        config_.make_scheduler ? config_.make_scheduler(config_)
                               : std::make_unique<SimpleScheduler>(SimpleSchedulerConfig{
                                     .max_num_batched_tokens = config_.max_num_batched_tokens,
                                     .max_num_seqs = config_.max_num_seqs});
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
        out.num_drafts_accepted = rec.num_drafts_accepted;
        outputs.push_back(std::move(out));
    }
    return outputs;
}

}  // namespace deepinfer::cpu
