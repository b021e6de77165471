// `deepinfer`: the user-facing CLI. Dispatches to subcommands; catches every error and prints one line.
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "engine/cli/commands.h"
#include "policies/common/log.h"

namespace {

struct Command {
    const char* name;
    const char* summary;
    int (*run)(const deepinfer::cli::Args&);
};

constexpr Command kCommands[] = {
    {"simulate", "simulate a deployment with the SimGrid cluster model", deepinfer::cli::run_simulate},
    {"generate", "generate tokens with a V4 checkpoint (CPU reference or CUDA)", deepinfer::cli::run_generate},
    {"eplb", "compute an expert placement from a load trace", deepinfer::cli::run_eplb},
    {"profile", "measure hardware curves on this machine's GPU", deepinfer::cli::run_profile},
    {"derive-profile", "write roofline-derived profiles (H200, B200) from datasheet figures",
     deepinfer::cli::run_derive_profile},
    {"info", "what this build contains (backends, devices)", deepinfer::cli::run_info},
};

void usage(std::FILE* out) {
    std::fprintf(out, "usage: deepinfer <command> [options]   (deepinfer <command> --help for its options)\n\ncommands:\n");
    for (const auto& c : kCommands) std::fprintf(out, "  %-15s %s\n", c.name, c.summary);
    std::fprintf(out, "\nlogging: --log sched:debug,kv:info (or DEEPINFER_LOG); logs go to stderr\n");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    const std::string cmd = argv[1];
    deepinfer::cli::Args args(argv + 2, argv + argc);
    for (const auto& c : kCommands) {
        if (cmd != c.name) continue;
        try {
            if (const char* env = std::getenv("DEEPINFER_LOG")) deepinfer::log::configure(env);
            return c.run(args);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "deepinfer %s: error: %s\n", c.name, e.what());
            return 1;
        }
    }
    std::fprintf(stderr, "deepinfer: unknown command \"%s\"\n", cmd.c_str());
    usage(stderr);
    return 1;
}
