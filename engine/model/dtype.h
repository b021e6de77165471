// Checkpoint element types and their conversion to float: BF16/F16, FP8 e4m3 (block-scaled),
// FP4 e2m1 (packed two per byte) and E8M0 power-of-two scales (V4_SPEC §2.3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace deepinfer::model {

enum class DType : std::uint8_t {
    kF64,
    kF32,
    kF16,
    kBF16,
    kI64,
    kI32,
    kI16,
    kI8,
    kU8,
    kBool,
    kF8E4M3,
    kF8E5M2,
    kF8E8M0,
};

/// Safetensors dtype string ("F32", "BF16", "F8_E4M3", "F8_E8M0", ...) -> DType; nullopt if unknown.
std::optional<DType> parse_dtype(std::string_view s);
std::string_view name(DType d);
/// Bytes per stored element.
std::size_t dtype_size(DType d);

float bf16_to_float(std::uint16_t bits);
float f16_to_float(std::uint16_t bits);
/// float8_e4m3fn (no infinities; 0x7f / 0xff are NaN).
float e4m3_to_float(std::uint8_t bits);
/// float8_e5m2 (IEEE-like, with infinities).
float e5m2_to_float(std::uint8_t bits);
/// E8M0 scale byte: 2^(bits - 127); 0xff is NaN.
float e8m0_to_float(std::uint8_t bits);
/// One e2m1 nibble (bit 3 = sign, magnitudes 0, .5, 1, 1.5, 2, 3, 4, 6).
float e2m1_to_float(std::uint8_t nibble);

/// Converts `count` elements of a float or integer type starting at `bytes` to float.
/// Throws InternalError for dtypes that need a scale (e4m3 weights go through dequant_fp8_block).
void convert_to_float(DType d, std::span<const std::byte> bytes, std::span<float> out);

/// FP8 block dequantisation: W[i,j] = e4m3(w[i,j]) * scale[i/block, j/block], `w` row-major
/// [rows, cols], `scale` row-major [ceil(rows/block), ceil(cols/block)] already converted to float.
void dequant_fp8_block(std::span<const std::uint8_t> w, std::span<const float> scale, std::int64_t rows,
                       std::int64_t cols, std::int64_t block, std::span<float> out);

/// FP4 dequantisation: byte b of row i holds elements 2b (low nibble) and 2b+1 (high nibble);
/// W[i,j] = e2m1 * scale[i, j/group]; `packed` is [rows, cols/2], `scale` [rows, cols/group].
void dequant_fp4(std::span<const std::uint8_t> packed, std::span<const float> scale, std::int64_t rows,
                 std::int64_t cols, std::int64_t group, std::span<float> out);

}  // namespace deepinfer::model
