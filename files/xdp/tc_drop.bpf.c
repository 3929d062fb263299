// SPDX-License-Identifier: GPL-2.0-only
/* tc_drop: cls_bpf direct-action program dropping every packet
 * (TC_ACT_SHOT), counted at xdplab_stats[1] ("drop"), for the
 * XDP vs tc vs netfilter drop comparison.
 *   tc qdisc add dev IF clsact
 *   tc filter add dev IF ingress bpf direct-action obj tc_drop.o sec tc */
#include <linux/pkt_cls.h>
#include "xdplab.h"

SEC("tc")
int tc_drop(struct __sk_buff *skb)
{
	xdplab_count(XDP_DROP, skb->len);
	return TC_ACT_SHOT;
}

char _license[] SEC("license") = "GPL";
