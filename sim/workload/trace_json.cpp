// JSONL trace reader (format: sim/workload/TRACE_FORMAT.md).
#include <fstream>

#include "sim/workload/workload.h"

namespace deepinfer::sim {

std::vector<SimRequest> read_trace_jsonl(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw TraceError(path, "cannot open trace file");
    std::vector<SimRequest> out;
    std::string line;
    std::int64_t line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string label = path + ":" + std::to_string(line_no);
        const JsonReader r = JsonReader::parse_text(line, label, JsonReader::ErrorKind::kTrace);
        r.expect_object();
        r.allow_keys({"arrival_s", "class", "prompt_tokens", "output_tokens", "session_id",
                      "shared_prefix_tokens", "prefix_id"});
        SimRequest q;
        q.arrival_s = r.get_double("arrival_s", NumRange::non_negative());
        q.traffic_class = *parse_traffic_class(r.at("class").as_enum({"chat", "agent"}));
        q.prompt_tokens =
            static_cast<std::int32_t>(r.get_int("prompt_tokens", NumRange::between(1, 1 << 24)));
        q.output_tokens =
            static_cast<std::int32_t>(r.get_int("output_tokens", NumRange::between(1, 1 << 24)));
        q.session_id = static_cast<std::uint64_t>(r.get_int_or("session_id", 0, NumRange::non_negative()));
        q.shared_prefix_tokens = static_cast<std::int32_t>(
            r.get_int_or("shared_prefix_tokens", 0, NumRange::between(0, q.prompt_tokens)));
        q.prefix_id = static_cast<std::uint64_t>(r.get_int_or("prefix_id", 0, NumRange::non_negative()));
        out.push_back(q);
    }
    if (out.empty()) throw TraceError(path, "trace has no requests");
    return out;
}

}  // namespace deepinfer::sim
