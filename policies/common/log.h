// A small logger: per-component levels, an injectable time source (simulated time inside SimGrid),
// level checked before the message is formatted. Logs go to stderr (or an injected sink).
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <string_view>

namespace deepinfer::log {

enum class Level { kTrace = 0, kDebug, kInfo, kWarn, kError, kOff };

enum class Component { kCore = 0, kSched, kKv, kEplb, kDspark, kRouter, kCost, kSim, kCuda, kCpu, kModel, kCli,
                       kCount };

std::string_view name(Component c);
std::string_view name(Level l);

/// Applies a spec such as "sched:debug,kv:info" or "debug" (all components). Throws ConfigError
/// (file label "--log") naming the bad component or level.
void configure(std::string_view spec);
/// Sets every component to `level`.
void set_all(Level level);
void set_level(Component c, Level level);
Level level(Component c);

inline bool enabled(Component c, Level l);

/// Replaces the time printed in front of each line (default: seconds since process start on the
/// steady clock). Pass nullptr to restore the default.
void set_time_source(std::function<double()> now_s);
/// Replaces where lines go (default: stderr). Pass nullptr to restore.
void set_sink(std::function<void(std::string_view line)> sink);

void write(Component c, Level l, const std::string& message);

namespace detail {
extern Level g_levels[static_cast<int>(Component::kCount)];
}

inline bool enabled(Component c, Level l) { return l >= detail::g_levels[static_cast<int>(c)]; }

}  // namespace deepinfer::log

/// DI_LOG(kSched, kDebug, "planned " << n << " seqs"); the stream expression is evaluated only
/// when the level is enabled.
#define DI_LOG(component, level, stream_expr)                                                        \
    do {                                                                                             \
        if (::deepinfer::log::enabled(::deepinfer::log::Component::component,                       \
                                      ::deepinfer::log::Level::level)) {                            \
            std::ostringstream di_log_os_;                                                           \
            di_log_os_ << stream_expr;                                                               \
            ::deepinfer::log::write(::deepinfer::log::Component::component,                          \
                                    ::deepinfer::log::Level::level, di_log_os_.str());               \
        }                                                                                            \
    } while (0)
