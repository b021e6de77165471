// `deepinfer derive-profile --hardware h200|b200 --out DIR`: roofline-derived profiles (SCHEMA.md)
// from V4-Flash FLOPs/bytes and datasheet figures, kind=derived, method=roofline.
#include <boost/program_options.hpp>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "engine/cli/commands.h"
#include "policies/common/check.h"
#include "policies/cost/roofline.h"

namespace deepinfer::cli {

int run_derive_profile(const Args& args) {
    namespace po = boost::program_options;
    po::options_description opts("deepinfer derive-profile options");
    std::string hardware, out, date;
    roofline::Efficiency eff;
    opts.add_options()("help,h", "show this help")("hardware", po::value(&hardware)->required(),
                                                   "h200 or b200")(
        "out", po::value(&out)->required(), "output folder (e.g. profiles/h200-roofline)")(
        "date", po::value(&date), "ISO date recorded in the files (default: today, UTC)")(
        "compute-efficiency", po::value(&eff.compute)->default_value(eff.compute), "fraction of peak FLOP/s")(
        "memory-efficiency", po::value(&eff.memory)->default_value(eff.memory),
        "fraction of peak HBM bandwidth")("nvlink-efficiency",
                                          po::value(&eff.nvlink)->default_value(eff.nvlink),
                                          "fraction of peak NVLink bandwidth");
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    if (vm.count("help")) {
        std::cout << "usage: deepinfer derive-profile --hardware h200|b200 --out DIR\n" << opts;
        return 0;
    }
    po::notify(vm);
    for (double f : {eff.compute, eff.memory, eff.nvlink})
        if (!(f > 0 && f <= 1))
            throw ConfigError("--*-efficiency", "", "a fraction in (0, 1]", std::to_string(f));
    if (date.empty()) {
        const std::time_t now = std::time(nullptr);
        char buf[16];
        std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&now));
        date = buf;
    }
    const roofline::HardwareSpec hw = roofline::hardware_spec(hardware);
    const ProfileSet set = roofline::derive_profile(hw, eff, date, "deepinfer 0.1.0 derive-profile");
    save_profile_dir(set, out);
    std::printf("wrote %zu op-group profiles \"%s\" (kind=derived, method=roofline) to %s\n",
                set.groups.size(), set.name.c_str(), out.c_str());
    return 0;
}

}  // namespace deepinfer::cli
