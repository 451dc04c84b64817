// The simulated Azure's resource types: their ARM, condition and short names, and the latencies of the
// realistic profile.
#include <string>

#include "core/json.h"
#include "provisioning/azure_internal.h"

namespace hcprp::provisioning {

namespace azure_internal {
namespace {

// Realistic latencies in seconds: create median, create p99, delete median, delete p99.
constexpr TypeInfo kTypes[kResourceTypeCount] = {
    {ResourceType::kResourceGroup, "Microsoft.Resources/resourceGroups", "ResourceGroup", "resourceGroup", 3,
     10, 90, 300},
    {ResourceType::kVirtualNetwork, "Microsoft.Network/virtualNetworks", "VNet", "virtualNetwork", 5, 15, 5,
     15},
    {ResourceType::kSubnet, "Microsoft.Network/virtualNetworks/subnets", "Subnet", "subnet", 4, 12, 4, 12},
    {ResourceType::kNetworkSecurityGroup, "Microsoft.Network/networkSecurityGroups", "SecurityGroups",
     "networkSecurityGroup", 4, 12, 4, 12},
    {ResourceType::kManagedIdentity, "Microsoft.ManagedIdentity/userAssignedIdentities", "Identity",
     "managedIdentity", 2, 6, 2, 6},
    {ResourceType::kLoadBalancer, "Microsoft.Network/loadBalancers", "LoadBalancers", "loadBalancer", 15, 45,
     12, 40},
    {ResourceType::kPublicIp, "Microsoft.Network/publicIPAddresses", "PublicIPs", "publicIP", 4, 15, 5, 20},
    {ResourceType::kNetworkInterface, "Microsoft.Network/networkInterfaces", "NetworkInterfaces",
     "networkInterface", 3, 10, 4, 15},
    {ResourceType::kDisk, "Microsoft.Compute/disks", "Disks", "disk", 6, 20, 5, 20},
    {ResourceType::kVirtualMachine, "Microsoft.Compute/virtualMachines", "VM", "virtualMachine", 110, 300, 80,
     240},
    {ResourceType::kRoleAssignment, "Microsoft.Authorization/roleAssignments", "RoleAssignment",
     "roleAssignment", 2, 6, 2, 6},
    {ResourceType::kVmExtension, "Microsoft.Compute/virtualMachines/extensions", "VMExtension", "vmExtension",
     60, 180, 20, 60},
};

}  // namespace

const TypeInfo& Info(ResourceType t) { return kTypes[static_cast<int>(t)]; }

}  // namespace azure_internal

using azure_internal::Info;

std::string_view ArmType(ResourceType t) { return Info(t).arm; }
std::string_view ConditionPrefix(ResourceType t) { return Info(t).condition; }
std::string_view ShortName(ResourceType t) { return Info(t).short_name; }

Result<ResourceType> ParseShortName(std::string_view name) {
  for (const auto& i : azure_internal::kTypes) {
    if (EqualsIgnoreCase(i.short_name, name) || EqualsIgnoreCase(i.arm, name)) return i.type;
  }
  return Error::InvalidArgument("unknown resource type '" + std::string(name) + "'");
}

}  // namespace hcprp::provisioning
