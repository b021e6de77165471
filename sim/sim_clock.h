// SimClock: the engine Clock inside SimGrid (simulated seconds).
#pragma once

#include "engine/core/clock.h"
#include "sim/sg_compat.h"

namespace deepinfer::sim {

class SimClock final : public engine::Clock {
public:
    double now_s() const override { return sg::now_s(); }
};

}  // namespace deepinfer::sim
