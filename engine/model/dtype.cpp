// Element-type conversions and dequantisers.
#include "engine/model/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "policies/common/check.h"

namespace deepinfer::model {
namespace {

struct DTypeInfo {
    DType dtype;
    std::string_view name;
    std::size_t size;
};
constexpr DTypeInfo kInfos[] = {
    {DType::kF64, "F64", 8},        {DType::kF32, "F32", 4},        {DType::kF16, "F16", 2},
    {DType::kBF16, "BF16", 2},      {DType::kI64, "I64", 8},        {DType::kI32, "I32", 4},
    {DType::kI16, "I16", 2},        {DType::kI8, "I8", 1},          {DType::kU8, "U8", 1},
    {DType::kBool, "BOOL", 1},      {DType::kF8E4M3, "F8_E4M3", 1}, {DType::kF8E5M2, "F8_E5M2", 1},
    {DType::kF8E8M0, "F8_E8M0", 1},
};

template <typename T>
T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

}  // namespace

std::optional<DType> parse_dtype(std::string_view s) {
    for (const auto& i : kInfos)
        if (i.name == s) return i.dtype;
    return std::nullopt;
}

std::string_view name(DType d) {
    for (const auto& i : kInfos)
        if (i.dtype == d) return i.name;
    return "?";
}

std::size_t dtype_size(DType d) {
    for (const auto& i : kInfos)
        if (i.dtype == d) return i.size;
    return 0;
}

float bf16_to_float(std::uint16_t bits) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

float f16_to_float(std::uint16_t bits) {
    const std::uint32_t sign = (bits >> 15) & 1u;
    const std::uint32_t exp = (bits >> 10) & 0x1fu;
    const std::uint32_t man = bits & 0x3ffu;
    float v;
    if (exp == 0)
        v = std::ldexp(static_cast<float>(man), -24);
    else if (exp == 31)
        v = man == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
    else
        v = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
    return sign ? -v : v;
}

float e4m3_to_float(std::uint8_t bits) {
    const bool neg = (bits & 0x80u) != 0;
    const int exp = (bits >> 3) & 0xf;
    const int man = bits & 0x7;
    float v;
    if (exp == 0xf && man == 0x7)
        v = std::numeric_limits<float>::quiet_NaN();
    else if (exp == 0)
        v = std::ldexp(static_cast<float>(man), -9);  // man/8 * 2^-6
    else
        v = std::ldexp(static_cast<float>(8 + man), exp - 10);  // (1 + man/8) * 2^(exp-7)
    return neg ? -v : v;
}

float e5m2_to_float(std::uint8_t bits) { return f16_to_float(static_cast<std::uint16_t>(bits) << 8); }

float e8m0_to_float(std::uint8_t bits) {
    if (bits == 0xff) return std::numeric_limits<float>::quiet_NaN();
    return std::ldexp(1.0f, static_cast<int>(bits) - 127);
}

float e2m1_to_float(std::uint8_t nibble) {
    static constexpr float kMag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    const float v = kMag[nibble & 0x7u];
    return (nibble & 0x8u) ? -v : v;
}

void convert_to_float(DType d, std::span<const std::byte> bytes, std::span<float> out) {
    const std::size_t size = dtype_size(d);
    DI_CHECK(bytes.size() == out.size() * size, "convert_to_float: " << bytes.size() << " bytes for "
                                                                     << out.size() << " elements of "
                                                                     << name(d));
    const std::byte* p = bytes.data();
    for (std::size_t i = 0; i < out.size(); ++i, p += size) {
        switch (d) {
            case DType::kF64:
                out[i] = static_cast<float>(load<double>(p));
                break;
            case DType::kF32:
                out[i] = load<float>(p);
                break;
            case DType::kF16:
                out[i] = f16_to_float(load<std::uint16_t>(p));
                break;
            case DType::kBF16:
                out[i] = bf16_to_float(load<std::uint16_t>(p));
                break;
            case DType::kI64:
                out[i] = static_cast<float>(load<std::int64_t>(p));
                break;
            case DType::kI32:
                out[i] = static_cast<float>(load<std::int32_t>(p));
                break;
            case DType::kI16:
                out[i] = static_cast<float>(load<std::int16_t>(p));
                break;
            case DType::kI8:
                out[i] = static_cast<float>(load<std::int8_t>(p));
                break;
            case DType::kU8:
            case DType::kBool:
                out[i] = static_cast<float>(load<std::uint8_t>(p));
                break;
            case DType::kF8E4M3:
                out[i] = e4m3_to_float(load<std::uint8_t>(p));
                break;
            case DType::kF8E5M2:
                out[i] = e5m2_to_float(load<std::uint8_t>(p));
                break;
            case DType::kF8E8M0:
                out[i] = e8m0_to_float(load<std::uint8_t>(p));
                break;
        }
    }
}

void dequant_fp8_block(std::span<const std::uint8_t> w, std::span<const float> scale, std::int64_t rows,
                       std::int64_t cols, std::int64_t block, std::span<float> out) {
    DI_CHECK(block > 0, "fp8 block size " << block);
    const std::int64_t scale_cols = (cols + block - 1) / block;
    DI_CHECK(static_cast<std::int64_t>(w.size()) == rows * cols && out.size() == w.size() &&
                 static_cast<std::int64_t>(scale.size()) == ((rows + block - 1) / block) * scale_cols,
             "dequant_fp8_block sizes");
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) {
            const auto k = static_cast<std::size_t>(i * cols + j);
            out[k] =
                e4m3_to_float(w[k]) * scale[static_cast<std::size_t>((i / block) * scale_cols + j / block)];
        }
}

void dequant_fp4(std::span<const std::uint8_t> packed, std::span<const float> scale, std::int64_t rows,
                 std::int64_t cols, std::int64_t group, std::span<float> out) {
    DI_CHECK(group > 0 && cols % 2 == 0 && cols % group == 0,
             "dequant_fp4 cols=" << cols << " group=" << group);
    DI_CHECK(static_cast<std::int64_t>(packed.size()) == rows * cols / 2 &&
                 static_cast<std::int64_t>(out.size()) == rows * cols &&
                 static_cast<std::int64_t>(scale.size()) == rows * (cols / group),
             "dequant_fp4 sizes");
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t b = 0; b < cols / 2; ++b) {
            const std::uint8_t byte = packed[static_cast<std::size_t>(i * (cols / 2) + b)];
            for (std::int64_t h = 0; h < 2; ++h) {
                const std::int64_t j = 2 * b + h;
                const std::uint8_t nib = static_cast<std::uint8_t>(h == 0 ? (byte & 0xfu) : (byte >> 4));
                out[static_cast<std::size_t>(i * cols + j)] =
                    e2m1_to_float(nib) * scale[static_cast<std::size_t>(i * (cols / group) + j / group)];
            }
        }
}

}  // namespace deepinfer::model
