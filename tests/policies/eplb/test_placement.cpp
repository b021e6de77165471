// ExpertPlacement validation.
#include <catch2/catch.hpp>

#include "policies/eplb/placement.h"

using namespace deepinfer;

TEST_CASE("ExpertPlacement: identity placement is valid", "[policies][eplb]") {
    const auto p = make_identity_placement(3, 16, 4);
    CHECK(p.validate().empty());
    CHECK(p.slots_per_gpu() == 4);
    CHECK(p.gpu_of(PhysicalSlotId(13)) == GpuRank(3));
}

TEST_CASE("ExpertPlacement: violations are named", "[policies][eplb]") {
    auto p = make_identity_placement(1, 4, 2);
    p.layers[0].phy2log[1] = LogicalExpertId(0);
    CHECK(p.validate() == "layer 0: expert 0 has two replicas on GPU 0");
    p = make_identity_placement(1, 4, 2);
    p.layers[0].phy2log[3] = LogicalExpertId(1);
    CHECK(p.validate() == "layer 0: expert 3 has no replica");
    p.layers[0].phy2log[3] = LogicalExpertId(9);
    CHECK(p.validate() == "layer 0: slot 3 holds expert 9, out of range");
}
