// ScaledDotProductAttention: decoded (so a blob that has one loads far enough to say so), not run yet: its
// row has no shape rule, and the shape pass reports the node as unsupported.
#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

void decode_sdpa(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::XNNScaledDotProductAttention*>(table);
  nd.inputs = {d.ref("query_id", t->query_id()), d.ref("key_id", t->key_id()),
               d.ref("value_id", t->value_id()), d.ref("scale_id", t->scale_id()),
               d.ref("mask_id", t->mask_id())};
  d.out_flags(t, nd);
}

}  // namespace

void register_attention(NodeTable& table) {
  claim(table, fb::XNodeUnion::XNNScaledDotProductAttention).decode = decode_sdpa;
}

}  // namespace webxnn
