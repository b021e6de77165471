// `deepinfer generate`: generates tokens with a V4 checkpoint on the CPU reference executor (full
// Scheduler, optional MTP speculation with a DSpark verify policy) and prints them as JSON;
// --dump-logits writes prompt_logits [S, V] and step_logits [N, V] (float32).
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/cli/commands.h"
#include "engine/cpu/llm.h"
#include "engine/model/safetensors.h"
#include "policies/common/check.h"

namespace deepinfer::cli {
namespace {

namespace po = boost::program_options;

std::vector<std::int32_t> parse_ids(const std::string& text, const std::string& flag) {
    std::vector<std::int32_t> ids;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        std::size_t used = 0;
        long long v = -1;
        try {
            v = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != item.size() || item.empty() || v < 0 || v > INT32_MAX)
            throw InputError(
                flag, "expected a comma-separated list of non-negative token ids, got \"" + item + "\"");
        ids.push_back(static_cast<std::int32_t>(v));
    }
    if (ids.empty()) throw InputError(flag, "expected at least one token id, got nothing");
    return ids;
}

VerifyPolicyKind parse_verify_policy(const std::string& v) {
    if (v == "fixed") return VerifyPolicyKind::kFixed;
    if (v == "threshold") return VerifyPolicyKind::kThreshold;
    if (v == "dynamic") return VerifyPolicyKind::kDynamic;
    throw InputError("--verify-policy", "expected fixed, threshold or dynamic, got \"" + v + "\"");
}

constexpr const char* kDefaultCostProfile = "profiles/h200-roofline";

}  // namespace

int run_generate(const Args& args) {
    std::string model_dir, prompt_ids, stop_ids, dump, verify_policy, cost_profile;
    cpu::SamplingParams sp;
    cpu::LLMConfig config;
    std::uint64_t seed = 0;
    po::options_description desc("deepinfer generate --model DIR --prompt-ids 1,2,3 [options]");
    desc.add_options()("help,h", "this help")(
        "model", po::value(&model_dir)->required(),
        "model directory (config.json + model.safetensors or a sharded index)")(
        "prompt-ids", po::value(&prompt_ids)->required(), "prompt token ids, comma-separated")(
        "max-tokens", po::value(&sp.max_tokens)->default_value(16), "most tokens to generate")(
        "temperature", po::value(&sp.temperature)->default_value(0.0), "0 = greedy")(
        "top-p", po::value(&sp.top_p)->default_value(1.0), "nucleus mass (1 = off)")(
        "top-k", po::value(&sp.top_k)->default_value(0), "keep the k most likely tokens (0 = off)")(
        "seed", po::value(&seed)->default_value(0), "sampling seed of the sequence")(
        "stop-ids", po::value(&stop_ids), "stop token ids, comma-separated")(
        "ignore-eos", po::bool_switch(&sp.ignore_eos), "do not stop at the model's eos_token_id")(
        "max-num-batched-tokens", po::value(&config.max_num_batched_tokens)->default_value(512),
        "scheduler token budget per step (prompt chunk length)")(
        "max-num-seqs", po::value(&config.max_num_seqs)->default_value(16), "most sequences per step")(
        "kv-cache-gib", po::value<double>()->default_value(1.0),
        "KV memory the scheduler's block pool accounts (GiB, fp32 caches of this model)")(
        "num-speculative-tokens", po::value(&config.num_speculative_tokens)->default_value(0),
        "MTP drafts proposed per step, 0..7 (0 = no speculation; > 0 needs MTP weights)")(
        "verify-policy", po::value(&verify_policy)->default_value("fixed"),
        "how many drafts each step verifies: fixed (all), threshold (cumulative MTP confidence >= "
        "--verify-threshold) or dynamic (DSpark: most expected tokens per second of predicted step time "
        "on the --cost-profile curves; falls back to fixed, with a note on stderr, when the profile "
        "cannot be found)")("verify-threshold", po::value(&config.verify_threshold)->default_value(0.5),
                            "threshold of --verify-policy threshold, in [0, 1]")(
        "cost-profile", po::value(&cost_profile),
        "profile directory of the dynamic verify policy's cost model (default profiles/h200-roofline "
        "relative to the working directory: H200 roofline times, not the CPU's)")(
        "dump-logits", po::value(&dump),
        "write prompt_logits [S, V] and step_logits [N, V] (float32) to this .safetensors");
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(args).options(desc).run(), vm);
        if (vm.count("help")) {
            std::cout << desc << "\n";
            return 0;
        }
        po::notify(vm);
    } catch (const po::error& e) {
        throw InputError("deepinfer generate", std::string(e.what()) + " (see --help)");
    }
    if (sp.max_tokens < 1)
        throw InputError("--max-tokens", "expected a positive integer, got " + std::to_string(sp.max_tokens));
    if (sp.temperature < 0.0)
        throw InputError("--temperature",
                         "expected a non-negative number, got " + std::to_string(sp.temperature));
    if (!(sp.top_p > 0.0 && sp.top_p <= 1.0))
        throw InputError("--top-p", "expected a number in (0, 1], got " + std::to_string(sp.top_p));
    const std::vector<std::int32_t> prompt = parse_ids(prompt_ids, "--prompt-ids");
    if (!stop_ids.empty()) sp.stop_token_ids = parse_ids(stop_ids, "--stop-ids");
    sp.seed = seed;
    sp.return_logits = !dump.empty();
    config.model = model_dir;
    config.kv_cache_bytes = vm["kv-cache-gib"].as<double>() * 1024.0 * 1024.0 * 1024.0;
    if (!(config.kv_cache_bytes > 0))
        throw InputError("--kv-cache-gib", "expected a positive number, got " +
                                               std::to_string(vm["kv-cache-gib"].as<double>()));
    config.verify_policy = parse_verify_policy(verify_policy);
    if (!(config.verify_threshold >= 0 && config.verify_threshold <= 1))
        throw InputError("--verify-threshold",
                         "expected a number in [0, 1], got " + std::to_string(config.verify_threshold));
    if (config.num_speculative_tokens > 0 && config.verify_policy == VerifyPolicyKind::kDynamic) {
        // An explicit --cost-profile must load; the default is used only where it exists.
        if (!cost_profile.empty())
            config.cost_profile_dir = cost_profile;
        else if (std::filesystem::is_directory(kDefaultCostProfile))
            config.cost_profile_dir = kDefaultCostProfile;
    }
    cpu::LLM llm(config);
    for (const std::string& note : llm.notes()) std::cerr << "note: " << note << "\n";
    const cpu::RequestOutput out = llm.generate({prompt}, sp).at(0);
    if (out.finish_reason == "rejected")
        throw InputError("--prompt-ids", "the request was rejected by the scheduler");
    if (!dump.empty()) {
        const std::int64_t V = llm.model_config().vocab_size;
        const auto S = static_cast<std::int64_t>(prompt.size());
        const auto N = static_cast<std::int64_t>(out.token_ids.size());
        model::write_safetensors(dump,
                                 {model::make_f32_tensor("prompt_logits", {S, V}, out.prompt_logits),
                                  model::make_f32_tensor("step_logits", {N, V}, out.step_logits)},
                                 {{"model", model_dir}, {"producer", "deepinfer generate (cpu reference)"}});
    }
    nlohmann::json j = {{"prompt_token_ids", out.prompt_token_ids},
                        {"token_ids", out.token_ids},
                        {"finish_reason", out.finish_reason}};
    if (config.num_speculative_tokens > 0) {
        j["verify_policy"] = std::string(name(llm.verify_policy()));
        if (llm.verify_policy() == VerifyPolicyKind::kDynamic) j["cost_profile"] = config.cost_profile_dir;
        j["num_drafts_proposed"] = out.num_drafts_proposed;
        j["num_drafts_verified"] = out.num_drafts_verified;
        j["num_drafts_accepted"] = out.num_drafts_accepted;
    }
    std::cout << j.dump() << "\n";
    return 0;
}

}  // namespace deepinfer::cli
