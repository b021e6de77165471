// JsonReader: strict typed access to JSON with file + JSON pointer in every error.
#include "policies/common/json_reader.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace deepinfer {
namespace {

std::string escape_pointer_token(std::string_view key) {
    std::string out;
    for (char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

std::string format_number(double v) {
    std::ostringstream os;
    os.precision(17);
    os << v;
    return os.str();
}

[[noreturn]] void throw_kind(JsonReader::ErrorKind kind, std::string file, std::string pointer,
                             std::string expected, std::string got) {
    switch (kind) {
        case JsonReader::ErrorKind::kProfile:
            throw ProfileError(std::move(file), std::move(pointer), std::move(expected), std::move(got));
        case JsonReader::ErrorKind::kTrace:
            throw TraceError(std::move(file), std::move(pointer), std::move(expected), std::move(got));
        case JsonReader::ErrorKind::kCheckpoint:
            throw CheckpointError(std::move(file), std::move(pointer), std::move(expected), std::move(got));
        case JsonReader::ErrorKind::kConfig:
            break;
    }
    throw ConfigError(std::move(file), std::move(pointer), std::move(expected), std::move(got));
}

[[noreturn]] void throw_kind_message(JsonReader::ErrorKind kind, std::string file, std::string message) {
    switch (kind) {
        case JsonReader::ErrorKind::kProfile:
            throw ProfileError(std::move(file), std::move(message));
        case JsonReader::ErrorKind::kTrace:
            throw TraceError(std::move(file), std::move(message));
        case JsonReader::ErrorKind::kCheckpoint:
            throw CheckpointError(std::move(file), std::move(message));
        case JsonReader::ErrorKind::kConfig:
            break;
    }
    throw ConfigError(std::move(file), std::move(message));
}

}  // namespace

bool NumRange::contains(double v) const {
    if (min) {
        if (min_exclusive ? !(v > *min) : !(v >= *min)) return false;
    }
    if (max && !(v <= *max)) return false;
    return true;
}

std::string NumRange::describe() const {
    if (min && max) return "in [" + format_number(*min) + ", " + format_number(*max) + "]";
    if (min) {
        if (*min == 0.0) return min_exclusive ? "positive" : "non-negative";
        return std::string(min_exclusive ? "> " : ">= ") + format_number(*min);
    }
    if (max) return "<= " + format_number(*max);
    return "";
}

JsonReader JsonReader::parse_file(const std::string& path, ErrorKind kind) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw_kind_message(kind, path, "cannot open file");
    std::ostringstream ss;
    ss << in.rdbuf();
    return parse_text(ss.str(), path, kind);
}

JsonReader JsonReader::parse_text(std::string_view text, std::string file_label, ErrorKind kind) {
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        // e.byte is the 1-based offset of the error; turn it into line:column.
        std::size_t line = 1;
        std::size_t col = 1;
        for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
            if (text[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        throw_kind_message(kind, file_label,
                           "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(col));
    }
    return from_json(std::move(doc), std::move(file_label), kind);
}

JsonReader JsonReader::from_json(nlohmann::json doc, std::string file_label, ErrorKind kind) {
    auto d = std::make_shared<Doc>(Doc{std::move(doc), std::move(file_label), kind});
    const nlohmann::json* root = &d->root;
    return JsonReader(std::move(d), root, "");
}

std::string JsonReader::describe(const nlohmann::json& v) {
    switch (v.type()) {
        case nlohmann::json::value_t::object:
            return "an object";
        case nlohmann::json::value_t::array:
            return "an array of " + std::to_string(v.size());
        case nlohmann::json::value_t::null:
            return "null";
        case nlohmann::json::value_t::string: {
            std::string s = v.get<std::string>();
            if (s.size() > 40) s = s.substr(0, 37) + "...";
            return "\"" + s + "\"";
        }
        default:
            return v.dump();
    }
}

void JsonReader::fail(std::string_view expected) const { fail(expected, describe(*node_)); }

void JsonReader::fail(std::string_view expected, std::string_view got) const {
    throw_kind(doc_->kind, doc_->file, pointer_, std::string(expected), std::string(got));
}

const JsonReader& JsonReader::expect_object() const {
    if (!node_->is_object()) fail("an object");
    return *this;
}

const JsonReader& JsonReader::expect_array() const {
    if (!node_->is_array()) fail("an array");
    return *this;
}

const JsonReader& JsonReader::allow_keys(std::initializer_list<std::string_view> allowed) const {
    std::vector<std::string> v(allowed.begin(), allowed.end());
    return allow_keys(v);
}

const JsonReader& JsonReader::allow_keys(const std::vector<std::string>& allowed) const {
    expect_object();
    for (const auto& [key, value] : node_->items()) {
        bool ok = false;
        for (const auto& a : allowed) ok = ok || key == a;
        if (!ok) {
            std::string list;
            for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
            JsonReader child(doc_, &value, pointer_ + "/" + escape_pointer_token(key));
            child.fail("a known key (one of: " + list + ")", "unknown key \"" + key + "\"");
        }
    }
    return *this;
}

bool JsonReader::has(std::string_view key) const {
    return node_->is_object() && node_->contains(std::string(key));
}

JsonReader JsonReader::at(std::string_view key) const {
    expect_object();
    auto it = node_->find(std::string(key));
    if (it == node_->end()) {
        throw_kind(doc_->kind, doc_->file, pointer_ + "/" + escape_pointer_token(key), "a value",
                   "nothing (missing key)");
    }
    return JsonReader(doc_, &*it, pointer_ + "/" + escape_pointer_token(key));
}

std::optional<JsonReader> JsonReader::find(std::string_view key) const {
    expect_object();
    auto it = node_->find(std::string(key));
    if (it == node_->end()) return std::nullopt;
    return JsonReader(doc_, &*it, pointer_ + "/" + escape_pointer_token(key));
}

JsonReader JsonReader::at(std::size_t i) const {
    expect_array();
    if (i >= node_->size()) fail("an array with more than " + std::to_string(i) + " elements");
    return JsonReader(doc_, &(*node_)[i], pointer_ + "/" + std::to_string(i));
}

std::size_t JsonReader::size() const {
    expect_array();
    return node_->size();
}

std::vector<std::string> JsonReader::keys() const {
    expect_object();
    std::vector<std::string> out;
    for (const auto& [key, value] : node_->items()) out.push_back(key);
    return out;
}

double JsonReader::as_double(NumRange range) const {
    if (!node_->is_number()) fail(range.describe().empty() ? "a number" : "a number " + range.describe());
    const double v = node_->get<double>();
    if (!std::isfinite(v) || !range.contains(v)) fail("a number " + range.describe());
    return v;
}

std::int64_t JsonReader::as_int(NumRange range) const {
    const std::string what = range.describe().empty() ? "an integer" : "an integer " + range.describe();
    if (node_->is_number_integer()) {
        const auto v = node_->is_number_unsigned()
                           ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                                 node_->get<std::uint64_t>(),
                                 static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())))
                           : node_->get<std::int64_t>();
        if (!range.contains(static_cast<double>(v))) fail(what);
        return v;
    }
    if (node_->is_number_float()) {
        // Accept 2.0 as 2, reject 2.5.
        const double d = node_->get<double>();
        if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15 && range.contains(d))
            return static_cast<std::int64_t>(d);
    }
    fail(what);
}

bool JsonReader::as_bool() const {
    if (!node_->is_boolean()) fail("true or false");
    return node_->get<bool>();
}

std::string JsonReader::as_string() const {
    if (!node_->is_string()) fail("a string");
    return node_->get<std::string>();
}

std::string JsonReader::as_enum(std::initializer_list<std::string_view> choices) const {
    std::string list;
    for (auto c : choices) list += (list.empty() ? "" : ", ") + std::string("\"") + std::string(c) + "\"";
    if (!node_->is_string()) fail("one of " + list);
    const std::string s = node_->get<std::string>();
    for (auto c : choices)
        if (s == c) return s;
    fail("one of " + list);
}

double JsonReader::get_double_or(std::string_view key, double dflt, NumRange range) const {
    auto r = find(key);
    return r ? r->as_double(range) : dflt;
}

std::int64_t JsonReader::get_int_or(std::string_view key, std::int64_t dflt, NumRange range) const {
    auto r = find(key);
    return r ? r->as_int(range) : dflt;
}

bool JsonReader::get_bool_or(std::string_view key, bool dflt) const {
    auto r = find(key);
    return r ? r->as_bool() : dflt;
}

std::string JsonReader::get_string_or(std::string_view key, std::string dflt) const {
    auto r = find(key);
    return r ? r->as_string() : dflt;
}

std::vector<double> JsonReader::as_double_vector(NumRange range) const {
    std::vector<double> out(size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = at(i).as_double(range);
    return out;
}

std::vector<std::int64_t> JsonReader::as_int_vector(NumRange range) const {
    std::vector<std::int64_t> out(size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = at(i).as_int(range);
    return out;
}

void apply_override(nlohmann::json& doc, std::string_view assignment, const std::string& source_label) {
    const auto eq = assignment.find('=');
    if (eq == std::string_view::npos || eq == 0) {
        throw ConfigError(source_label, "", "a.b.c=VALUE", "\"" + std::string(assignment) + "\"");
    }
    const std::string path(assignment.substr(0, eq));
    const std::string value_text(assignment.substr(eq + 1));
    nlohmann::json value;
    try {
        value = nlohmann::json::parse(value_text);
    } catch (const nlohmann::json::parse_error&) {
        value = value_text;
    }
    nlohmann::json* node = &doc;
    std::string pointer;
    std::size_t start = 0;
    while (true) {
        const auto dot = path.find('.', start);
        const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const bool last = dot == std::string::npos;
        if (key.empty()) throw ConfigError(source_label, pointer, "a non-empty key in " + path, "\"\"");
        if (node->is_array()) {
            std::size_t idx = 0;
            try {
                std::size_t used = 0;
                idx = std::stoul(key, &used);
                if (used != key.size()) throw std::invalid_argument(key);
            } catch (const std::exception&) {
                throw ConfigError(source_label, pointer, "an array index", "\"" + key + "\"");
            }
            if (idx >= node->size())
                throw ConfigError(source_label, pointer + "/" + key,
                                  "an index below " + std::to_string(node->size()), key);
            node = &(*node)[idx];
        } else if (node->is_object()) {
            // A missing key on the way is created as an object: the strict reader that reads the
            // document afterwards rejects a misspelt one, naming it.
            if (!last && !node->contains(key)) (*node)[key] = nlohmann::json::object();
            node = &(*node)[key];
        } else {
            throw ConfigError(source_label, pointer, "an object or array to descend into for " + path,
                              JsonReader::describe(*node));
        }
        pointer += '/';
        pointer += escape_pointer_token(key);
        if (last) break;
        start = dot + 1;
    }
    *node = std::move(value);
}

std::string dump_pretty(const nlohmann::json& doc) { return doc.dump(2) + "\n"; }

}  // namespace deepinfer
