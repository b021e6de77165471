// `deepinfer generate`: generates tokens with a V4 checkpoint on the CPU reference executor and
// prints them as JSON; --dump-logits writes prompt_logits [S, V] and step_logits [N, V] (float32).
#include <boost/program_options.hpp>
#include <cstdio>
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

}  // namespace

int run_generate(const Args& args) {
    std::string model_dir, prompt_ids, stop_ids, dump;
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
        "num-speculative-tokens", po::value(&config.num_speculative_tokens)->default_value(0),
        "MTP drafts per step (needs MTP weights and a scheduler that drafts)")(
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
    cpu::LLM llm(config);
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
    std::cout << j.dump() << "\n";
    return 0;
}

}  // namespace deepinfer::cli
