// SPDX-License-Identifier: GPL-2.0-only
/* xdp_tx: swap the Ethernet source and destination MACs and send the frame
 * back out of the interface it came in on (XDP_TX). Frames shorter than an
 * Ethernet header are aborted (XDP_ABORTED). */
#include "xdplab.h"

SEC("xdp")
int xdp_tx(struct xdp_md *ctx)
{
	if (xdplab_swap_macs(ctx))
		return xdplab_xdp_return(ctx, XDP_ABORTED);
	return xdplab_xdp_return(ctx, XDP_TX);
}

char _license[] SEC("license") = "GPL";
