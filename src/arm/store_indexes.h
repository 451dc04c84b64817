// What the store indexes in hcprp's documents (documents.h): the members its queries filter on.
// The composition root and every test that opens a store for ARM documents pass this in
// store::OpenOptions::indexes.
#pragma once

#include "store/store.h"

namespace hcprp::arm {

// /resourceType (every document's type), /properties/resourceId (the ARM resource ID of a resource
// document) and /properties/status (an operation's status; active until one of kTerminalStates).
// The same members every release has indexed: a database written by an earlier one keeps working.
store::IndexSpec StoreIndexes();

}  // namespace hcprp::arm
