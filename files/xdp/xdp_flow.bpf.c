// SPDX-License-Identifier: GPL-2.0-only
/*
 * xdp_flow: flow table, the "xdp_flow" offload case.
 *
 * Parses Ethernet, up to two VLAN tags (802.1Q / 802.1ad), IPv4 or IPv6
 * (no IPv6 extension headers are walked) and the UDP/TCP ports, looks the
 * 5-tuple up in the HASH map xdplab_flows and applies the entry's action
 * (XDP_DROP, XDP_PASS, XDP_TX with MACs swapped, XDP_REDIRECT to the
 * entry's ifindex), counting the entry's packets/bytes with atomic adds.
 * A miss (or a frame that is not IPv4/IPv6) takes the action configured in
 * xdplab_flow_cfg[0] (XDP_PASS until configured). Hits and misses are
 * counted per CPU in xdplab_flow_cnt[0] and [1]; every verdict in
 * xdplab_stats like every other program.
 */
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include "xdplab.h"

#define XDPLAB_AF_INET 2
#define XDPLAB_AF_INET6 10
#define XDPLAB_IP_MF 0x2000
#define XDPLAB_IP_OFFSET 0x1FFF

struct xdplab_vlan_hdr {
	__be16 tci;
	__be16 proto;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct xdplab_flow_key);
	__type(value, struct xdplab_flow_val);
} xdplab_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdplab_flow_cfg);
} xdplab_flow_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct xdplab_counter);
} xdplab_flow_cnt SEC(".maps");

/* Fill key from the frame; returns 0 on success, -1 if not IPv4/IPv6. */
static __always_inline int parse_flow(void *data, void *data_end,
				      struct xdplab_flow_key *key)
{
	struct ethhdr *eth = data;
	void *l4;
	__u16 proto;
	int i;

	if ((void *)(eth + 1) > data_end)
		return -1;
	proto = eth->h_proto;
	data = eth + 1;

#pragma unroll
	for (i = 0; i < 2; i++) {
		struct xdplab_vlan_hdr *vh = data;

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(vh + 1) > data_end)
			return -1;
		proto = vh->proto;
		data = vh + 1;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = data;

		if ((void *)(iph + 1) > data_end || iph->ihl < 5)
			return -1;
		key->family = XDPLAB_AF_INET;
		key->proto = iph->protocol;
		__builtin_memcpy(key->saddr, &iph->saddr, 4);
		__builtin_memcpy(key->daddr, &iph->daddr, 4);
		if (iph->frag_off & bpf_htons(XDPLAB_IP_OFFSET))
			return 0; /* non-first fragment: no ports */
		l4 = data + iph->ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h = data;

		if ((void *)(ip6h + 1) > data_end)
			return -1;
		key->family = XDPLAB_AF_INET6;
		key->proto = ip6h->nexthdr;
		__builtin_memcpy(key->saddr, &ip6h->saddr, 16);
		__builtin_memcpy(key->daddr, &ip6h->daddr, 16);
		l4 = ip6h + 1;
	} else {
		return -1;
	}

	if (key->proto == IPPROTO_UDP) {
		struct udphdr *uh = l4;

		if ((void *)(uh + 1) > data_end)
			return 0;
		key->sport = uh->source;
		key->dport = uh->dest;
	} else if (key->proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > data_end)
			return 0;
		key->sport = th->source;
		key->dport = th->dest;
	}
	return 0;
}

static __always_inline int flow_verdict(struct xdp_md *ctx, __u32 action,
					__u32 ifindex)
{
	switch (action) {
	case XDP_DROP:
	case XDP_PASS:
		break;
	case XDP_TX:
		if (xdplab_swap_macs(ctx))
			action = XDP_ABORTED;
		break;
	case XDP_REDIRECT:
		action = bpf_redirect(ifindex, 0);
		break;
	default:
		action = XDP_ABORTED;
	}
	return xdplab_xdp_return(ctx, action);
}

static __always_inline void flow_count(__u32 idx, __u64 len)
{
	struct xdplab_counter *c = bpf_map_lookup_elem(&xdplab_flow_cnt, &idx);

	if (c) {
		c->packets++;
		c->bytes += len;
	}
}

SEC("xdp")
int xdp_flow(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = data_end - data;
	struct xdplab_flow_key key = {};
	struct xdplab_flow_val *val;
	struct xdplab_flow_cfg *cfg;
	__u32 zero = 0;

	if (parse_flow(data, data_end, &key) == 0) {
		val = bpf_map_lookup_elem(&xdplab_flows, &key);
		if (val) {
			__sync_fetch_and_add(&val->packets, 1);
			__sync_fetch_and_add(&val->bytes, len);
			flow_count(XDPLAB_FLOW_HIT, len);
			return flow_verdict(ctx, val->action, val->ifindex);
		}
	}

	flow_count(XDPLAB_FLOW_MISS, len);
	cfg = bpf_map_lookup_elem(&xdplab_flow_cfg, &zero);
	if (cfg && (cfg->flags & XDPLAB_FLOW_CFG_VALID))
		return flow_verdict(ctx, cfg->miss_action, cfg->miss_ifindex);
	return xdplab_xdp_return(ctx, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
