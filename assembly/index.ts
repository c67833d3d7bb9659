// The kernel module: every export is a kernel called as (node record address, thread
// index, thread count) by each worker; see src/backends/cpu/kernels.ts for the table.

export { k_flash_attn, k_flash_attn_merge } from './attention';
export { k_flash_attn_row } from './attention-row';
export { k_probe_dot, k_read_bw } from './bench';
export { k_add, k_gelu, k_mul, k_norm, k_rms_norm, k_scale, k_silu, k_soft_max, k_tanh } from './elementwise';
export { k_clamp, k_div, k_sigmoid, k_sum_rows } from './elementwise';
export { k_add_id, k_argsort, k_swiglu_oai } from './experts';
export { k_mm, k_mm_prep, k_mmid } from './matmul';
export { repack4, repackMXFP4, repackQ4_0, repackQ4K, repackQ5_0, repackQ6K } from './repack';
export { k_rope } from './rope';
export { k_concat, k_cpy, k_get_rows, k_set_rows } from './rows';
export { kqInit, kqQ2_K, kqQ3_K, kqQ4_K, kqQ5_K, kqQ6_K } from './kquantize';
export { k_gated_delta_net, k_l2_norm, k_relu, k_softplus, k_sqr, k_ssm_conv, k_ssm_scan } from './ssm';
