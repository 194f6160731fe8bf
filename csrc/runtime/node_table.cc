#include "runtime/node_table.h"

#include <cstdio>
#include <cstdlib>

namespace webxnn {

// One register function per family file (nodes/*.cc), each filling the rows of its node types.
#define WX_NODE_FAMILY(family) void register_##family(NodeTable& table);
#include "runtime/nodes/families.def"
#undef WX_NODE_FAMILY

NodeDef& claim(NodeTable& table, NodeType type) {
  NodeDef& d = table[static_cast<uint8_t>(type)];
  if (d.decode) {
    const uint8_t raw = static_cast<uint8_t>(type);
    const char* name = node_type_name(raw);
    std::fprintf(stderr, "webxnn: node type %u (%s) is registered by two families (nodes/families.def)\n",
                 unsigned(raw), name ? name : "?");
    std::abort();
  }
  return d;
}

NodeDef& define_node(NodeTable& table, NodeType type, DecodeFn decode, ShapesFn shapes, CheckFn check,
                     ExecFn exec) {
  NodeDef& d = claim(table, type);
  d.decode = decode;
  d.shapes = shapes;
  d.check = check;
  d.exec = exec;
  return d;
}

// Built on first use (thread-safe), by explicit calls: no reliance on static initialisers in a static
// library, which the linker may drop.
const NodeTable& node_table() {
  static const NodeTable table = [] {
    NodeTable t{};
#define WX_NODE_FAMILY(family) register_##family(t);
#include "runtime/nodes/families.def"
#undef WX_NODE_FAMILY
    return t;
  }();
  return table;
}

}  // namespace webxnn
