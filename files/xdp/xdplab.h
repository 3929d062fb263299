/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * xdplab.h: common definitions for the xdplab.testbed BPF programs.
 *
 * CONTRACT (relied on by plugins/module_utils/xdp/_bpf.py and the bench role):
 * every program has a BPF_MAP_TYPE_PERCPU_ARRAY named xdplab_stats,
 * key __u32 = XDP action code (0 aborted, 1 drop, 2 pass, 3 tx, 4 redirect),
 * value struct xdplab_counter, max_entries 5. Each packet a program returns
 * is counted at the index of the verdict it returns (tc_drop counts its
 * TC_ACT_SHOT verdicts at index 1, "drop").
 */
#ifndef XDPLAB_H
#define XDPLAB_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#define XDPLAB_NR_ACTIONS 5 /* XDP_ABORTED .. XDP_REDIRECT */

struct xdplab_counter {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPLAB_NR_ACTIONS);
	__type(key, __u32);
	__type(value, struct xdplab_counter);
} xdplab_stats SEC(".maps");

/* Count one packet of `len` bytes at index `action`; returns `action` so a
 * program can end with `return xdplab_count(...)`. Per-CPU value: plain
 * increments, no atomics needed on the fast path. */
static __always_inline __u32 xdplab_count(__u32 action, __u64 len)
{
	struct xdplab_counter *c;

	c = bpf_map_lookup_elem(&xdplab_stats, &action);
	if (c) {
		c->packets++;
		c->bytes += len;
	}
	return action;
}

static __always_inline __u32 xdplab_xdp_return(struct xdp_md *ctx, __u32 action)
{
	return xdplab_count(action, (__u64)(ctx->data_end - ctx->data));
}

/* Swap Ethernet source and destination MACs. Returns -1 if the frame is
 * shorter than an Ethernet header. */
static __always_inline int xdplab_swap_macs(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 tmp[ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return -1;
	__builtin_memcpy(tmp, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, tmp, ETH_ALEN);
	return 0;
}

/* ---- xdp_flow: flow table ("xdp_flow" offload case) ---- */

/* Key of xdplab_flows. Addresses in network byte order; IPv4 addresses use
 * the first 4 bytes, the rest zero. Ports in network byte order (0 for
 * protocols without ports and for non-first fragments). family is AF_INET (2)
 * or AF_INET6 (10). 40 bytes, no implicit padding. */
struct xdplab_flow_key {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u8 proto;
	__u8 family;
	__u16 pad;
};

/* Value of xdplab_flows: action (XDP_DROP/PASS/TX/REDIRECT), egress ifindex
 * for XDP_REDIRECT, per-entry counters (shared between CPUs: updated with
 * atomic adds). 24 bytes. */
struct xdplab_flow_val {
	__u32 action;
	__u32 ifindex;
	__u64 packets;
	__u64 bytes;
};

/* Value of xdplab_flow_cfg[0]: what to do on a miss. Until flags has
 * XDPLAB_FLOW_CFG_VALID set (the array starts zeroed), a miss passes. */
#define XDPLAB_FLOW_CFG_VALID 1U
struct xdplab_flow_cfg {
	__u32 miss_action;
	__u32 flags;
	__u32 miss_ifindex;
	__u32 pad;
};

/* Index into xdplab_flow_cnt (per-CPU struct xdplab_counter). */
#define XDPLAB_FLOW_HIT 0
#define XDPLAB_FLOW_MISS 1

#endif /* XDPLAB_H */
