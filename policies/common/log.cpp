// Logger state and formatting.
#include "policies/common/log.h"

#include <array>
#include <chrono>
#include <cstdio>

#include "policies/common/check.h"

namespace deepinfer::log {
namespace {

constexpr std::array<std::string_view, static_cast<int>(Component::kCount)> kComponentNames = {
    "core", "sched", "kv", "eplb", "dspark", "router", "cost", "sim", "cuda", "cpu", "model", "cli"};
constexpr std::array<std::string_view, 6> kLevelNames = {"trace", "debug", "info", "warn", "error", "off"};

std::function<double()>& time_source() {
    static std::function<double()> f;
    return f;
}

std::function<void(std::string_view)>& sink() {
    static std::function<void(std::string_view)> f;
    return f;
}

double default_now_s() {
    static const auto start = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Level parse_level(std::string_view s) {
    for (std::size_t i = 0; i < kLevelNames.size(); ++i)
        if (kLevelNames[i] == s) return static_cast<Level>(i);
    throw ConfigError("--log", "", "a level (trace, debug, info, warn, error, off)", "\"" + std::string(s) + "\"");
}

}  // namespace

namespace detail {
Level g_levels[static_cast<int>(Component::kCount)] = {Level::kWarn, Level::kWarn, Level::kWarn, Level::kWarn,
                                                       Level::kWarn, Level::kWarn, Level::kWarn, Level::kWarn,
                                                       Level::kWarn, Level::kWarn, Level::kWarn, Level::kWarn};
}

std::string_view name(Component c) { return kComponentNames[static_cast<int>(c)]; }
std::string_view name(Level l) { return kLevelNames[static_cast<int>(l)]; }

void set_all(Level level) {
    for (auto& l : detail::g_levels) l = level;
}
void set_level(Component c, Level level) { detail::g_levels[static_cast<int>(c)] = level; }
Level level(Component c) { return detail::g_levels[static_cast<int>(c)]; }

void configure(std::string_view spec) {
    std::size_t start = 0;
    while (start <= spec.size()) {
        const auto comma = spec.find(',', start);
        const std::string_view item =
            spec.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        if (!item.empty()) {
            const auto colon = item.find(':');
            if (colon == std::string_view::npos) {
                set_all(parse_level(item));
            } else {
                const std::string_view comp = item.substr(0, colon);
                const Level l = parse_level(item.substr(colon + 1));
                bool found = false;
                for (int i = 0; i < static_cast<int>(Component::kCount); ++i) {
                    if (kComponentNames[i] == comp) {
                        detail::g_levels[i] = l;
                        found = true;
                    }
                }
                if (!found) {
                    std::string list;
                    for (auto n : kComponentNames) list += (list.empty() ? "" : ", ") + std::string(n);
                    throw ConfigError("--log", "", "a component (" + list + ")", "\"" + std::string(comp) + "\"");
                }
            }
        }
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
}

void set_time_source(std::function<double()> now_s) { time_source() = std::move(now_s); }
void set_sink(std::function<void(std::string_view line)> s) { sink() = std::move(s); }

void write(Component c, Level l, const std::string& message) {
    const double t = time_source() ? time_source()() : default_now_s();
    char prefix[64];
    std::snprintf(prefix, sizeof prefix, "[%12.6f] ", t);
    std::string line = prefix;
    line += "[";
    line += name(c);
    line += "/";
    line += name(l);
    line += "] ";
    line += message;
    line += "\n";
    if (sink()) {
        sink()(line);
    } else {
        std::fwrite(line.data(), 1, line.size(), stderr);
    }
}

}  // namespace deepinfer::log
