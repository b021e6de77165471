// ExpertPlacement validation and the identity placement.
#include "policies/eplb/placement.h"

#include <cmath>

#include "policies/common/check.h"

namespace deepinfer {
namespace {

std::string validate_share(const LayerPlacement& layer, int num_experts) {
    const auto& share = layer.replica_share;
    if (share.empty()) return "";
    if (share.size() != layer.phy2log.size())
        return "replica_share has " + std::to_string(share.size()) + " entries, expected " +
               std::to_string(layer.phy2log.size());
    std::vector<double> sum(static_cast<std::size_t>(num_experts), 0.0);
    for (std::size_t s = 0; s < share.size(); ++s) {
        if (!(share[s] >= 0.0 && share[s] <= 1.0 + 1e-9))
            return "replica_share of slot " + std::to_string(s) + " is " + std::to_string(share[s]) +
                   ", not in [0, 1]";
        sum[static_cast<std::size_t>(layer.phy2log[s].value())] += share[s];
    }
    for (int e = 0; e < num_experts; ++e)
        if (std::abs(sum[static_cast<std::size_t>(e)] - 1.0) > 1e-6)
            return "replica_share of expert " + std::to_string(e) + " sums to " +
                   std::to_string(sum[static_cast<std::size_t>(e)]);
    return "";
}

}  // namespace

std::string ExpertPlacement::validate() const {
    if (num_gpus <= 0) return "num_gpus must be positive";
    if (num_nodes <= 0 || num_gpus % num_nodes != 0) return "num_nodes must divide num_gpus";
    if (num_logical_experts <= 0) return "num_logical_experts must be positive";
    const auto n = static_cast<std::size_t>(num_slots());
    if (n == 0 || n % static_cast<std::size_t>(num_gpus) != 0)
        return "slot count must be a positive multiple of num_gpus";
    const std::size_t per_gpu = n / static_cast<std::size_t>(num_gpus);
    for (std::size_t l = 0; l < layers.size(); ++l) {
        const auto& p = layers[l].phy2log;
        const std::string where = "layer " + std::to_string(l) + ": ";
        if (p.size() != n)
            return where + "has " + std::to_string(p.size()) + " slots, layer 0 has " + std::to_string(n);
        std::vector<int> replicas(static_cast<std::size_t>(num_logical_experts), 0);
        std::vector<std::int64_t> last_gpu(static_cast<std::size_t>(num_logical_experts), -1);
        for (std::size_t s = 0; s < n; ++s) {
            const int e = p[s].value();
            if (e < 0 || e >= num_logical_experts)
                return where + "slot " + std::to_string(s) + " holds expert " + std::to_string(e) +
                       ", out of range";
            const auto gpu = static_cast<std::int64_t>(s / per_gpu);
            if (last_gpu[static_cast<std::size_t>(e)] == gpu)
                return where + "expert " + std::to_string(e) + " has two replicas on GPU " +
                       std::to_string(gpu);
            last_gpu[static_cast<std::size_t>(e)] = gpu;
            ++replicas[static_cast<std::size_t>(e)];
        }
        for (int e = 0; e < num_logical_experts; ++e)
            if (replicas[static_cast<std::size_t>(e)] == 0)
                return where + "expert " + std::to_string(e) + " has no replica";
        if (const std::string err = validate_share(layers[l], num_logical_experts); !err.empty())
            return where + err;
    }
    return "";
}

ExpertPlacement make_identity_placement(std::int32_t num_layers, std::int32_t num_experts,
                                        std::int32_t num_gpus, std::int32_t num_nodes) {
    DI_CHECK(num_gpus > 0 && num_experts % num_gpus == 0,
             "identity placement needs experts divisible by GPUs: " << num_experts << " / " << num_gpus);
    ExpertPlacement p{
        .num_gpus = num_gpus, .num_nodes = num_nodes, .num_logical_experts = num_experts, .layers = {}};
    p.layers.resize(static_cast<std::size_t>(num_layers));
    for (auto& layer : p.layers) {
        layer.phy2log.reserve(static_cast<std::size_t>(num_experts));
        for (std::int32_t e = 0; e < num_experts; ++e) layer.phy2log.emplace_back(e);
    }
    return p;
}

}  // namespace deepinfer
