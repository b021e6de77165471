// Safetensors files: a hardened header parser (fuzzed, tests/fuzz/), a read-only memory-mapped
// file, and a small writer (logit dumps, test fixtures).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/model/dtype.h"

namespace deepinfer::model {

/// One tensor entry of a safetensors header. Offsets are relative to the start of the data
/// section (the byte after the header).
struct TensorInfo {
    std::string name;
    DType dtype = DType::kF32;
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;

    std::int64_t numel() const;
};

struct SafetensorsHeader {
    /// Bytes before the data section (8 + header length).
    std::uint64_t data_offset = 0;
    /// Entries sorted by name.
    std::vector<TensorInfo> tensors;
    std::map<std::string, std::string> metadata;
};

/// Largest header accepted (bytes of JSON); real checkpoints stay far below.
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

/// Parses and validates the header of a whole safetensors file held in `file_bytes`: the length
/// prefix fits the file, the JSON is an object of {dtype, shape, data_offsets} entries, dtypes are
/// known, each byte range matches its shape and lies inside the file, and no two ranges overlap.
/// Throws CheckpointError("<label>: ...", naming the tensor where there is one) on anything else.
SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file_bytes, const std::string& label);

/// A read-only memory map of a whole file. Movable, not copyable.
class MappedFile {
public:
    /// Maps `path`; throws CheckpointError naming the file when it cannot be opened or mapped.
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&&) = delete;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    std::span<const std::byte> bytes() const { return {data_, size_}; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

/// A parsed, mapped safetensors file.
class SafetensorsFile {
public:
    explicit SafetensorsFile(const std::string& path);

    const std::string& path() const { return file_.path(); }
    const std::vector<TensorInfo>& tensors() const { return header_.tensors; }
    const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
    /// nullptr when absent.
    const TensorInfo* find(const std::string& name) const;
    /// The raw bytes of `info` (which must come from this file).
    std::span<const std::byte> data(const TensorInfo& info) const;

private:
    MappedFile file_;
    SafetensorsHeader header_;
};

/// A tensor to write: float32 or int32/int64 data with a shape.
struct TensorToWrite {
    std::string name;
    DType dtype = DType::kF32;
    std::vector<std::int64_t> shape;
    /// Raw little-endian bytes (numel * dtype_size).
    std::vector<std::byte> bytes;
};

TensorToWrite make_f32_tensor(std::string name, std::vector<std::int64_t> shape,
                              std::span<const float> values);
TensorToWrite make_i32_tensor(std::string name, std::vector<std::int64_t> shape,
                              std::span<const std::int32_t> values);

/// Writes a safetensors file (tensors in the given order, 8-byte aligned header). Throws
/// CheckpointError naming `path` on I/O failure.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});
/// The bytes of such a file (for tests that build corrupt variants).
std::vector<std::byte> serialize_safetensors(const std::vector<TensorToWrite>& tensors,
                                             const std::map<std::string, std::string>& metadata = {});

}  // namespace deepinfer::model
