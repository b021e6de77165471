// libFuzzer target: the safetensors header parser must reject every malformed file with a
// CheckpointError (one line) and never crash, overflow or read outside the input.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/model/safetensors.h"
#include "policies/common/check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    try {
        const deepinfer::model::SafetensorsHeader h =
            deepinfer::model::parse_safetensors_header(bytes, "fuzz.safetensors");
        // Every accepted entry must lie inside the input.
        for (const auto& t : h.tensors) {
            if (h.data_offset + t.end > size || t.begin > t.end) __builtin_trap();
        }
    } catch (const deepinfer::CheckpointError& e) {
        for (const char* p = e.what(); *p != '\0'; ++p)
            if (*p == '\n') __builtin_trap();  // errors are one line
    }
    return 0;
}
