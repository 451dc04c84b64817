// Builds the Cluster Service create request of a resource from its stored document, for the backend's
// recovery of creates whose frontend stopped midway. Uses the same conversion as the frontend, so a
// recovered create sends exactly what the frontend would have sent.
#pragma once

#include "backend/backend.h"

namespace hcprp::app {

class CreateBuilder final : public backend::CreateRequestBuilder {
 public:
  Result<backend::ClusterServiceCreateRequest> Build(const store::Document& resource,
                                                     const store::Document* parent) override;
};

}  // namespace hcprp::app
