// SPDX-License-Identifier: GPL-2.0-only
/* xdp_redirect: redirect every packet to the interface whose ifindex is
 * stored at key 0 of the DEVMAP xdplab_redirect (XDP_REDIRECT). With no
 * entry at key 0 the packet is aborted (XDP_ABORTED), so a missing
 * configuration shows in the counters instead of silently passing.
 * Note for veth targets: the peer of the egress veth needs an XDP program
 * (e.g. xdp_pass) for redirected frames to be accepted. */
#include "xdplab.h"

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xdplab_redirect SEC(".maps");

SEC("xdp")
int xdp_redirect(struct xdp_md *ctx)
{
	__u32 action = bpf_redirect_map(&xdplab_redirect, 0, XDP_ABORTED);

	return xdplab_xdp_return(ctx, action);
}

char _license[] SEC("license") = "GPL";
