// Checkpoint opening (single / sharded) and canonical-name lookup.
#include "engine/model/checkpoint.h"

#include <algorithm>
#include <filesystem>

#include "engine/model/tensor_names.h"
#include "policies/common/json_reader.h"

namespace deepinfer::model {

void Checkpoint::add_file(std::unique_ptr<SafetensorsFile> file, const std::vector<std::string>* only) {
    for (const TensorInfo& t : file->tensors()) {
        if (only != nullptr && std::find(only->begin(), only->end(), t.name) == only->end()) continue;
        std::string canon = canonical_tensor_name(t.name);
        auto [it, inserted] = entries_.emplace(canon, Entry{file.get(), &t, t.name});
        if (!inserted)
            throw CheckpointError(
                file->path(), "tensor \"" + t.name + "\" duplicates \"" + it->second.stored_name + "\" in " +
                                  it->second.file->path() + " (both are \"" + canon + "\")");
    }
    files_.push_back(std::move(file));
}

Checkpoint Checkpoint::open(const std::string& path) {
    namespace fs = std::filesystem;
    Checkpoint ck;
    ck.path_ = path;
    if (!fs::is_directory(path)) {
        if (!fs::exists(path)) throw CheckpointError(path, "no such checkpoint file or directory");
        ck.add_file(std::make_unique<SafetensorsFile>(path), nullptr);
        return ck;  // path_ is the file itself
    }
    const fs::path index = fs::path(path) / "model.safetensors.index.json";
    if (fs::exists(index)) {
        ck.path_ = index.string();
        const JsonReader r = JsonReader::parse_file(index.string(), JsonReader::ErrorKind::kCheckpoint);
        r.allow_keys({"metadata", "weight_map"});
        const JsonReader map = r.at("weight_map").expect_object();
        // shard file -> tensor names it must hold
        std::map<std::string, std::vector<std::string>> by_file;
        for (const std::string& name : map.keys()) {
            const std::string shard = map.at(name).as_string();
            if (shard.empty() || shard.find('/') != std::string::npos || shard == "..")
                map.at(name).fail("a shard file name inside the checkpoint directory");
            by_file[shard].push_back(name);
        }
        for (auto& [shard, names] : by_file) {
            const std::string shard_path = (fs::path(path) / shard).string();
            if (!fs::exists(shard_path))
                throw CheckpointError(index.string(), "shard \"" + shard + "\" (holding \"" + names.front() +
                                                          "\") does not exist");
            auto file = std::make_unique<SafetensorsFile>(shard_path);
            for (const std::string& n : names)
                if (file->find(n) == nullptr)
                    throw CheckpointError(
                        shard_path, "tensor \"" + n + "\" listed in model.safetensors.index.json is missing");
            ck.add_file(std::move(file), &names);
        }
        return ck;
    }
    const fs::path single = fs::path(path) / "model.safetensors";
    if (!fs::exists(single))
        throw CheckpointError(path,
                              "expected model.safetensors or model.safetensors.index.json in the directory");
    ck.path_ = single.string();
    ck.add_file(std::make_unique<SafetensorsFile>(single.string()), nullptr);
    return ck;
}

const Checkpoint::Entry* Checkpoint::find(const std::string& canonical_name) const {
    auto it = entries_.find(canonical_name);
    return it == entries_.end() ? nullptr : &it->second;
}

std::vector<std::string> Checkpoint::names() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : entries_) out.push_back(k);
    return out;
}

}  // namespace deepinfer::model
