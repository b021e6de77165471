// The Clock interface: wall time in the real engine, simulated time in SimGrid, set by hand in tests.
#pragma once

#include <chrono>

namespace deepinfer::engine {

class Clock {
public:
    virtual ~Clock() = default;
    /// Seconds since an arbitrary, fixed origin.
    virtual double now_s() const = 0;
};

/// std::chrono::steady_clock, origin at construction.
class SteadyClock final : public Clock {
public:
    SteadyClock() : origin_(std::chrono::steady_clock::now()) {}
    double now_s() const override {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
    }

private:
    std::chrono::steady_clock::time_point origin_;
};

/// A clock that moves only when told to (tests, scripted executors).
class ManualClock final : public Clock {
public:
    double now_s() const override { return now_s_; }
    void set(double t_s) { now_s_ = t_s; }
    void advance(double dt_s) { now_s_ += dt_s; }

private:
    double now_s_ = 0.0;
};

}  // namespace deepinfer::engine
