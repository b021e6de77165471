// Safetensors header parsing (hardened against malformed input), mmap, and writing.
#include "engine/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "policies/common/check.h"

namespace deepinfer::model {
namespace {

// Errors are one line: control characters from hostile input are replaced.
[[noreturn]] void bad(const std::string& label, std::string message) {
    for (char& ch : message)
        if (static_cast<unsigned char>(ch) < 0x20) ch = '?';
    throw CheckpointError(label, std::move(message));
}

// NOTE: a header is at most three levels deep ({name: {shape: [..]}}); rejecting deeper nesting
// before parsing keeps hostile inputs ("[[[[...") from exhausting the stack.
void check_nesting(std::string_view text, const std::string& label) {
    int depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (char ch : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (ch == '\\')
                escaped = true;
            else if (ch == '"')
                in_string = false;
            continue;
        }
        if (ch == '"') in_string = true;
        if (ch == '{' || ch == '[') {
            if (++depth > 4) bad(label, "safetensors header nests deeper than 4 levels");
        } else if (ch == '}' || ch == ']') {
            --depth;
        }
    }
}

std::uint64_t read_u64_le(std::span<const std::byte> b) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(b[static_cast<std::size_t>(i)]);
    return v;
}

TensorInfo parse_entry(const std::string& name, const nlohmann::json& e, std::uint64_t data_size,
                       const std::string& label) {
    const std::string where = "tensor \"" + name + "\": ";
    if (!e.is_object()) bad(label, where + "expected an object with dtype, shape, data_offsets");
    for (const auto& [k, v] : e.items()) {
        (void)v;
        if (k != "dtype" && k != "shape" && k != "data_offsets")
            bad(label, where + "unknown field \"" + k + "\"");
    }
    TensorInfo t;
    t.name = name;
    auto dt = e.find("dtype");
    if (dt == e.end() || !dt->is_string()) bad(label, where + "expected a string dtype");
    const auto parsed = parse_dtype(dt->get<std::string>());
    if (!parsed) bad(label, where + "unknown dtype \"" + dt->get<std::string>() + "\"");
    t.dtype = *parsed;
    auto sh = e.find("shape");
    if (sh == e.end() || !sh->is_array()) bad(label, where + "expected a shape array");
    if (sh->size() > 8) bad(label, where + "shape has more than 8 dimensions");
    std::uint64_t numel = 1;
    for (const auto& d : *sh) {
        if (!d.is_number_unsigned()) bad(label, where + "shape entries must be non-negative integers");
        const std::uint64_t v = d.get<std::uint64_t>();
        if (v > (1ull << 40)) bad(label, where + "dimension " + std::to_string(v) + " is too large");
        if (v != 0 && numel > (1ull << 50) / v) bad(label, where + "shape product overflows");
        numel *= v;
        t.shape.push_back(static_cast<std::int64_t>(v));
    }
    auto off = e.find("data_offsets");
    if (off == e.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
        bad(label, where + "expected data_offsets [begin, end] of non-negative integers");
    t.begin = (*off)[0].get<std::uint64_t>();
    t.end = (*off)[1].get<std::uint64_t>();
    if (t.begin > t.end) bad(label, where + "data_offsets begin > end");
    if (t.end > data_size)
        bad(label, where + "data ends at byte " + std::to_string(t.end) + " of a data section of " +
                       std::to_string(data_size) + " bytes (truncated file?)");
    const std::uint64_t want = numel * dtype_size(t.dtype);
    if (t.end - t.begin != want)
        bad(label, where + "byte range of " + std::to_string(t.end - t.begin) +
                       " bytes does not match shape x " + std::string(model::name(t.dtype)) + " = " +
                       std::to_string(want) + " bytes");
    return t;
}

}  // namespace

std::int64_t TensorInfo::numel() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file_bytes, const std::string& label) {
    if (file_bytes.size() < 8)
        bad(label,
            "file of " + std::to_string(file_bytes.size()) + " bytes is too short for a safetensors header");
    const std::uint64_t n = read_u64_le(file_bytes.first(8));
    if (n > kMaxSafetensorsHeaderBytes)
        bad(label, "header length " + std::to_string(n) + " exceeds the limit");
    if (n > file_bytes.size() - 8)
        bad(label, "header length " + std::to_string(n) + " overflows the file of " +
                       std::to_string(file_bytes.size()) + " bytes");
    std::string_view text(reinterpret_cast<const char*>(file_bytes.data() + 8), static_cast<std::size_t>(n));
    check_nesting(text, label);
    // Duplicate keys would be silently merged by the DOM parser: catch them with the callback.
    std::vector<std::string> top_keys;
    auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (event == nlohmann::json::parse_event_t::key && depth == 1)
            top_keys.push_back(parsed.get<std::string>());
        return true;
    };
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text, callback);
    } catch (const nlohmann::json::exception& e) {
        bad(label, std::string("safetensors header is not valid JSON: ") + e.what());
    }
    if (!doc.is_object()) bad(label, "safetensors header must be a JSON object");
    std::sort(top_keys.begin(), top_keys.end());
    if (auto dup = std::adjacent_find(top_keys.begin(), top_keys.end()); dup != top_keys.end())
        bad(label, "tensor \"" + *dup + "\" appears twice in the header");

    SafetensorsHeader h;
    h.data_offset = 8 + n;
    const std::uint64_t data_size = file_bytes.size() - h.data_offset;
    for (const auto& [key, value] : doc.items()) {
        if (key == "__metadata__") {
            if (!value.is_object()) bad(label, "__metadata__ must be an object of strings");
            for (const auto& [mk, mv] : value.items()) {
                if (!mv.is_string()) bad(label, "__metadata__ \"" + mk + "\" must be a string");
                h.metadata[mk] = mv.get<std::string>();
            }
            continue;
        }
        h.tensors.push_back(parse_entry(key, value, data_size, label));
    }
    // Overlap check on the byte ranges, in offset order (empty tensors take no bytes).
    std::vector<const TensorInfo*> by_offset;
    for (const auto& t : h.tensors)
        if (t.end > t.begin) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
    });
    for (std::size_t i = 1; i < by_offset.size(); ++i)
        if (by_offset[i]->begin < by_offset[i - 1]->end)
            bad(label,
                "tensor \"" + by_offset[i]->name + "\" overlaps tensor \"" + by_offset[i - 1]->name + "\"");
    std::sort(h.tensors.begin(), h.tensors.end(),
              [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
    return h;
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw CheckpointError(path, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ::close(fd);
        throw CheckpointError(path, std::string("cannot stat: ") + std::strerror(errno));
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
        void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            ::close(fd);
            throw CheckpointError(path, std::string("cannot mmap: ") + std::strerror(errno));
        }
        data_ = static_cast<const std::byte*>(p);
    }
    ::close(fd);
}

MappedFile::~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
}

SafetensorsFile::SafetensorsFile(const std::string& path)
    : file_(path), header_(parse_safetensors_header(file_.bytes(), path)) {}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
    auto it = std::lower_bound(header_.tensors.begin(), header_.tensors.end(), name,
                               [](const TensorInfo& t, const std::string& n) { return t.name < n; });
    return (it != header_.tensors.end() && it->name == name) ? &*it : nullptr;
}

std::span<const std::byte> SafetensorsFile::data(const TensorInfo& info) const {
    return file_.bytes().subspan(static_cast<std::size_t>(header_.data_offset + info.begin),
                                 static_cast<std::size_t>(info.end - info.begin));
}

TensorToWrite make_f32_tensor(std::string name, std::vector<std::int64_t> shape,
                              std::span<const float> values) {
    TensorToWrite t{.name = std::move(name), .dtype = DType::kF32, .shape = std::move(shape)};
    t.bytes.resize(values.size() * sizeof(float));
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
}

TensorToWrite make_i32_tensor(std::string name, std::vector<std::int64_t> shape,
                              std::span<const std::int32_t> values) {
    TensorToWrite t{.name = std::move(name), .dtype = DType::kI32, .shape = std::move(shape)};
    t.bytes.resize(values.size() * sizeof(std::int32_t));
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
}

std::vector<std::byte> serialize_safetensors(const std::vector<TensorToWrite>& tensors,
                                             const std::map<std::string, std::string>& metadata) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::uint64_t offset = 0;
    for (const auto& t : tensors) {
        header[t.name] = {{"dtype", std::string(name(t.dtype))},
                          {"shape", t.shape},
                          {"data_offsets", {offset, offset + t.bytes.size()}}};
        offset += t.bytes.size();
    }
    std::string text = header.dump();
    while ((text.size() + 8) % 8 != 0) text.push_back(' ');
    std::vector<std::byte> out(8 + text.size() + offset);
    std::uint64_t n = text.size();
    for (int i = 0; i < 8; ++i)
        out[static_cast<std::size_t>(i)] = static_cast<std::byte>((n >> (8 * i)) & 0xffu);
    std::memcpy(out.data() + 8, text.data(), text.size());
    std::size_t pos = 8 + text.size();
    for (const auto& t : tensors) {
        if (!t.bytes.empty()) std::memcpy(out.data() + pos, t.bytes.data(), t.bytes.size());
        pos += t.bytes.size();
    }
    return out;
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    const std::vector<std::byte> bytes = serialize_safetensors(tensors, metadata);
    std::ofstream os(path, std::ios::binary | std::ios::trunc);
    if (!os) throw CheckpointError(path, "cannot open for writing");
    os.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!os) throw CheckpointError(path, "write failed");
}

}  // namespace deepinfer::model
