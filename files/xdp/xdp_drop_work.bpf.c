// SPDX-License-Identifier: GPL-2.0-only
/*
 * xdp_drop_work: xdp_drop (drop every packet, counted at xdplab_stats[1]) plus a fixed amount of
 * extra work per packet: XDPLAB_WORK_ROUNDS rounds of a 64-bit LCG kept on the stack (volatile, so
 * the compiler cannot fold or drop it). Built beside xdp_drop, the pair differs only by that work:
 * its cost is the known cost the DUT's accounting must recover (BPF_PROG_TEST_RUN in repeat mode of
 * each build gives the reference).
 */
#include "xdplab.h"

#ifndef XDPLAB_WORK_ROUNDS
#define XDPLAB_WORK_ROUNDS 256
#endif

SEC("xdp")
int xdp_drop_work(struct xdp_md *ctx)
{
	volatile __u64 x = ctx->data_end - ctx->data;
	int i;

	for (i = 0; i < XDPLAB_WORK_ROUNDS; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return xdplab_xdp_return(ctx, XDP_DROP);
}

char _license[] SEC("license") = "GPL";
