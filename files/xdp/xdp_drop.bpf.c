// SPDX-License-Identifier: GPL-2.0-only
/* xdp_drop: drop every packet (XDP_DROP), counted at xdplab_stats[1]. */
#include "xdplab.h"

SEC("xdp")
int xdp_drop(struct xdp_md *ctx)
{
	return xdplab_xdp_return(ctx, XDP_DROP);
}

char _license[] SEC("license") = "GPL";
