// Traffic class names.
#include "policies/request.h"

namespace deepinfer {

std::string_view name(TrafficClass c) { return c == TrafficClass::kAgent ? "agent" : "chat"; }

std::optional<TrafficClass> parse_traffic_class(std::string_view s) {
    if (s == "chat") return TrafficClass::kChat;
    if (s == "agent") return TrafficClass::kAgent;
    return std::nullopt;
}

}  // namespace deepinfer
