// Writes compact JSON straight into a string, for documents encoded often enough that building a
// json::value first costs more than the encoding itself (the provisioning state's units and Azure
// resources). The output parses back with ParseJson to what the equivalent json::value serialises to.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hcprp {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& BeginObject() {
    Separate();
    out_ += '{';
    first_ = true;
    return *this;
  }
  JsonWriter& EndObject() {
    out_ += '}';
    first_ = false;
    return *this;
  }
  JsonWriter& BeginArray() {
    Separate();
    out_ += '[';
    first_ = true;
    return *this;
  }
  JsonWriter& EndArray() {
    out_ += ']';
    first_ = false;
    return *this;
  }
  // A member's name; the next value written is its value.
  JsonWriter& Key(std::string_view name);
  JsonWriter& String(std::string_view s);
  JsonWriter& Int(int64_t v);
  JsonWriter& Bool(bool v) {
    Separate();
    out_ += v ? "true" : "false";
    return *this;
  }
  // A value already encoded as JSON text.
  JsonWriter& Raw(std::string_view json_text) {
    Separate();
    out_ += json_text;
    return *this;
  }

  // Member shorthands.
  JsonWriter& Member(std::string_view name, std::string_view s) { return Key(name).String(s); }
  JsonWriter& Member(std::string_view name, const char* s) { return Key(name).String(s); }
  JsonWriter& Member(std::string_view name, const std::string& s) { return Key(name).String(s); }
  JsonWriter& Member(std::string_view name, int64_t v) { return Key(name).Int(v); }
  JsonWriter& Member(std::string_view name, int v) { return Key(name).Int(v); }
  JsonWriter& Member(std::string_view name, bool v) { return Key(name).Bool(v); }

 private:
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_) out_ += ',';
    first_ = false;
  }
  void AppendEscaped(std::string_view s);

  std::string& out_;
  bool first_ = true;
  bool after_key_ = false;
};

}  // namespace hcprp
