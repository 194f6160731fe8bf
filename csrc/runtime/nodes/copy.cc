// Copy: the output is its input's bytes. Usually no step runs at all (a view: the output shares the input's
// storage, see plan.cc); otherwise the step copies them.
#include "runtime/nodes/common.h"

namespace webxnn {

void register_copy(NodeTable& table) {
  define_node(table, fb::XNodeUnion::XNNCopy, decode_1x1, same_shape, check_bytes, view_exec).traits = kView;
}

}  // namespace webxnn
