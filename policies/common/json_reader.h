// Strict JSON reading: every value knows its file and JSON pointer, so every error names both.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policies/common/check.h"

namespace deepinfer {

/// Numeric constraints for JsonReader getters. Unset bounds mean unbounded.
struct NumRange {
    std::optional<double> min;
    std::optional<double> max;
    bool min_exclusive = false;

    static NumRange positive() { return {.min = 0.0, .max = {}, .min_exclusive = true}; }
    static NumRange non_negative() { return {.min = 0.0, .max = {}, .min_exclusive = false}; }
    static NumRange between(double lo, double hi) { return {.min = lo, .max = hi, .min_exclusive = false}; }
    static NumRange at_least(double lo) { return {.min = lo, .max = {}, .min_exclusive = false}; }
    static NumRange unit() { return between(0.0, 1.0); }
    bool contains(double v) const;
    std::string describe() const;
};

/// A view of one JSON value inside a parsed document. Cheap to copy (shares the document).
/// Getters throw ConfigError (or the error kind chosen at parse time) naming file, pointer,
/// what was expected and what was found. Objects should call `allow_keys` to reject unknown keys.
class JsonReader {
public:
    enum class ErrorKind { kConfig, kProfile, kTrace, kCheckpoint };

    /// Reads and parses `path`; a missing file or a syntax error names the file (and line/column).
    static JsonReader parse_file(const std::string& path, ErrorKind kind = ErrorKind::kConfig);
    /// Parses `text`; `file_label` is the name used in errors.
    static JsonReader parse_text(std::string_view text, std::string file_label,
                                 ErrorKind kind = ErrorKind::kConfig);
    /// Wraps an already-parsed document.
    static JsonReader from_json(nlohmann::json doc, std::string file_label,
                                ErrorKind kind = ErrorKind::kConfig);

    const nlohmann::json& json() const { return *node_; }
    const std::string& file() const { return doc_->file; }
    const std::string& pointer() const { return pointer_; }

    bool is_object() const { return node_->is_object(); }
    bool is_array() const { return node_->is_array(); }
    bool is_null() const { return node_->is_null(); }

    /// Throws unless this value is an object whose keys are all in `allowed`.
    const JsonReader& allow_keys(std::initializer_list<std::string_view> allowed) const;
    const JsonReader& allow_keys(const std::vector<std::string>& allowed) const;
    /// Throws unless this value is an object / array.
    const JsonReader& expect_object() const;
    const JsonReader& expect_array() const;

    bool has(std::string_view key) const;
    /// The member `key` (required).
    JsonReader at(std::string_view key) const;
    /// The member `key`, or nullopt when absent.
    std::optional<JsonReader> find(std::string_view key) const;
    /// Array element `i` (this must be an array).
    JsonReader at(std::size_t i) const;
    /// Array length (this must be an array).
    std::size_t size() const;
    /// Object keys in document order (sorted: nlohmann::json keeps keys sorted).
    std::vector<std::string> keys() const;

    // Scalars of this value.
    double as_double(NumRange range = {}) const;
    std::int64_t as_int(NumRange range = {}) const;
    bool as_bool() const;
    std::string as_string() const;
    /// One of `choices`; the error lists them.
    std::string as_enum(std::initializer_list<std::string_view> choices) const;

    // Required members.
    double get_double(std::string_view key, NumRange range = {}) const { return at(key).as_double(range); }
    std::int64_t get_int(std::string_view key, NumRange range = {}) const { return at(key).as_int(range); }
    bool get_bool(std::string_view key) const { return at(key).as_bool(); }
    std::string get_string(std::string_view key) const { return at(key).as_string(); }

    // Optional members with a default.
    double get_double_or(std::string_view key, double dflt, NumRange range = {}) const;
    std::int64_t get_int_or(std::string_view key, std::int64_t dflt, NumRange range = {}) const;
    bool get_bool_or(std::string_view key, bool dflt) const;
    std::string get_string_or(std::string_view key, std::string dflt) const;

    std::vector<double> as_double_vector(NumRange range = {}) const;
    std::vector<std::int64_t> as_int_vector(NumRange range = {}) const;

    /// Throws this reader's error kind: `<file>: <pointer>: expected <expected>, got <got>`.
    [[noreturn]] void fail(std::string_view expected) const;
    [[noreturn]] void fail(std::string_view expected, std::string_view got) const;

    /// Short description of a JSON value for error messages (`-3`, `"abc"`, `an object`).
    static std::string describe(const nlohmann::json& v);

private:
    struct Doc {
        nlohmann::json root;
        std::string file;
        ErrorKind kind;
    };
    JsonReader(std::shared_ptr<const Doc> doc, const nlohmann::json* node, std::string pointer)
        : doc_(std::move(doc)), node_(node), pointer_(std::move(pointer)) {}

    std::shared_ptr<const Doc> doc_;
    const nlohmann::json* node_;
    std::string pointer_;
};

/// Applies a `--set a.b.c=VALUE` override to `doc`. VALUE is parsed as JSON when it parses
/// (numbers, true/false, null, arrays, objects, quoted strings), else taken as a plain string.
/// Array elements are addressed by index (`layers.0.x`). Missing intermediate objects are created
/// and the last key may be new (strict readers then reject unknown keys). Throws ConfigError naming
/// `source_label` (e.g. "--set") and the path when the path does not resolve.
void apply_override(nlohmann::json& doc, std::string_view assignment, const std::string& source_label);

/// Serialises `doc` with 2-space indentation and a trailing newline (stable key order).
std::string dump_pretty(const nlohmann::json& doc);

}  // namespace deepinfer
