// The defaults the real service fills into a body (semantic.h lists them).
#include "api/semantic.h"

namespace hcprp::api {
namespace {

// The object at `key` of `parent`, created when absent; nullptr when it holds another type.
json::object* Child(json::object* parent, std::string_view key) {
  if (parent == nullptr) return nullptr;
  json::value& v = (*parent)[key];
  if (v.is_null()) v = json::object();
  return v.if_object();
}

void Default(json::object* o, std::string_view key, json::value value) {
  if (o == nullptr) return;
  auto it = o->find(key);
  if (it == o->end() || it->value().is_null()) (*o)[key] = std::move(value);
}

}  // namespace

void ApplyServiceDefaults(Kind kind, json::object& body) {
  json::object* props = Child(&body, "properties");
  switch (kind) {
    case Kind::kCluster: {
      json::object* scaling = Child(props, "autoscaling");
      Default(scaling, "maxPodGracePeriodSeconds", json::value(600));
      Default(scaling, "maxNodeProvisionTimeSeconds", json::value(900));
      Default(scaling, "podPriorityThreshold", json::value(-10));
      break;
    }
    case Kind::kNodePool: {
      Default(props, "autoRepair", json::value(true));
      json::object* disk = Child(Child(props, "platform"), "osDisk");
      Default(disk, "sizeGiB", json::value(64));
      Default(disk, "diskStorageAccountType", json::value("Premium_LRS"));
      Default(disk, "diskType", json::value("Managed"));
      break;
    }
    case Kind::kExternalAuth:
      break;
  }
}

}  // namespace hcprp::api
