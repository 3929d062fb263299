// SPDX-License-Identifier: GPL-2.0-only
/* xdp_pass: hand every packet to the stack (XDP_PASS), counted at xdplab_stats[2]. */
#include "xdplab.h"

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return xdplab_xdp_return(ctx, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
