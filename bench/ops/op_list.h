// Every op of the registry, once: ENGINE_OP(name) for each, in the order the harness lists and
// the bench times them. op_case.h makes the OpId enum of it and registry.cpp the table of
// descriptions (describe_<name>(), defined in descriptions/); adding an op is this one line
// and its description file (kernels/README.md, "Adding an op").
// No include guard: each includer defines ENGINE_OP first.
ENGINE_OP(conv2d_forward)
ENGINE_OP(conv2d_backward_data)
ENGINE_OP(conv2d_backward_filter)
ENGINE_OP(cast)
ENGINE_OP(bn_forward)
ENGINE_OP(bn_backward)
ENGINE_OP(bn_sums)
ENGINE_OP(relu)
ENGINE_OP(relu_backward)
ENGINE_OP(add_relu)
ENGINE_OP(add)
ENGINE_OP(fill)
ENGINE_OP(maxpool)
ENGINE_OP(maxpool_backward)
ENGINE_OP(avgpool)
ENGINE_OP(avgpool_backward)
ENGINE_OP(linear_fwd)
ENGINE_OP(linear_bwd_data)
ENGINE_OP(linear_bwd_weight)
ENGINE_OP(cross_entropy)
ENGINE_OP(soft_cross_entropy)
ENGINE_OP(topk)
ENGINE_OP(sgd)
