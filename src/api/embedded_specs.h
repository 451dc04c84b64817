// The OpenAPI documents of every served api-version, compiled into the library (see
// cmake/embed_specs.cmake). The data is constant and lives for the whole program.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace hcprp::api {

struct EmbeddedDoc {
  std::string_view file_name;      // path below api-spec/specification/: ".../stable/2026-10-01/openapi.json"
  const std::string_view* chunks;  // the text, split into pieces
  std::size_t chunk_count;

  std::string Text() const {
    std::string s;
    for (std::size_t i = 0; i < chunk_count; ++i) s.append(chunks[i]);
    return s;
  }
};

std::span<const EmbeddedDoc> EmbeddedSpecs();

}  // namespace hcprp::api
