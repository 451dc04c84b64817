#include "app/create_builder.h"

#include "api/api.h"
#include "arm/documents.h"
#include "arm/resource_id.h"
#include "frontend/cs_mapping.h"

namespace hcprp::app {

Result<backend::ClusterServiceCreateRequest> CreateBuilder::Build(const store::Document& resource,
                                                                  const store::Document* parent) {
  auto doc = arm::ResourceDocument::FromBody(resource.body);
  if (!doc.ok()) return doc.error();
  auto id = arm::ParseResourceId(doc->resource_id);
  if (!id.ok()) return id.error();
  auto model = api::FromStorage(doc->resource);
  if (!model.ok()) return model.error();
  std::string parent_href;
  if (parent) {
    auto p = arm::ResourceDocument::FromBody(parent->body);
    if (!p.ok()) return p.error();
    parent_href = p->internal_id;
  }
  backend::ClusterServiceCreateRequest req;
  req.collection_href = frontend::ClusterServiceCollection(id->kind, parent_href);
  req.body = frontend::ClusterServiceCreateBody(*id, *model);
  return req;
}

}  // namespace hcprp::app
