// A checkpoint: one or more memory-mapped safetensors files (single file or sharded through
// model.safetensors.index.json), with tensors looked up by canonical (hub) name.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/safetensors.h"

namespace deepinfer::model {

class Checkpoint {
public:
    struct Entry {
        const SafetensorsFile* file = nullptr;
        const TensorInfo* info = nullptr;
        /// The name as stored in the file.
        std::string stored_name;
    };

    /// Opens `path`: a `.safetensors` file, or a directory with `model.safetensors.index.json`
    /// (sharded) or `model.safetensors`. Throws CheckpointError naming the file (and tensor).
    static Checkpoint open(const std::string& path);

    /// The entry for a canonical name (see canonical_tensor_name), nullptr when absent.
    const Entry* find(const std::string& canonical_name) const;
    /// Canonical names of all tensors, sorted.
    std::vector<std::string> names() const;
    /// The file that lists the tensors: the .safetensors file, or model.safetensors.index.json.
    const std::string& path() const { return path_; }
    /// Raw bytes of an entry.
    std::span<const std::byte> data(const Entry& e) const { return e.file->data(*e.info); }

private:
    void add_file(std::unique_ptr<SafetensorsFile> file, const std::vector<std::string>* only);

    std::string path_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, Entry> entries_;
};

}  // namespace deepinfer::model
