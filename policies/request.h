// A request as every policy sees it: what to compute, how much, for whom. Plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "policies/common/ids.h"

namespace deepinfer {

/// Traffic classes differ in prefix-cache time-to-live and in the workload models.
enum class TrafficClass : std::uint8_t { kChat = 0, kAgent = 1 };
inline constexpr int kNumTrafficClasses = 2;

std::string_view name(TrafficClass c);
/// "chat" / "agent"; nullopt for anything else.
std::optional<TrafficClass> parse_traffic_class(std::string_view s);

/// One generation request.
struct Request {
    RequestId id{0};
    /// Arrival time in seconds (simulated or steady-clock time of the Instance's Clock).
    double arrival_s = 0.0;
    TrafficClass traffic_class = TrafficClass::kChat;
    /// Lower value = more urgent; FCFS inside a priority class.
    std::int32_t priority = 0;
    /// The prompt's token ids. The real engine always fills them. The simulator may leave them empty
    /// and give `prompt_len_tokens` and `prompt_block_hashes` instead.
    std::vector<std::int32_t> prompt_token_ids;
    /// Prompt length in tokens (== prompt_token_ids.size() when ids are given).
    std::int32_t prompt_len_tokens = 0;
    /// Optional chained content hashes, one per full 128-token block of the prompt; when empty
    /// the prefix cache derives them from `prompt_token_ids`.
    std::vector<std::uint64_t> prompt_block_hashes;
    /// Generation stops after this many output tokens (or earlier on a stop token).
    std::int32_t max_new_tokens = 1;
    /// Conversation/agent session the request belongs to (0 = none); the router uses it for affinity.
    std::uint64_t session_id = 0;
    /// Leading prompt tokens whose KV already exists on this instance when the request arrives because
    /// another instance computed it and handed it over (P/D disaggregation: a decode instance gets the
    /// prompt's KV from a prefill instance). The scheduler starts the request at this position.
    /// 0 = none; at most prompt_len() - 1 (the last known token is always computed here).
    std::int32_t num_handed_over_tokens = 0;

    std::int32_t prompt_len() const {
        return prompt_token_ids.empty() ? prompt_len_tokens
                                        : static_cast<std::int32_t>(prompt_token_ids.size());
    }
};

}  // namespace deepinfer
