// SPDX-License-Identifier: GPL-2.0-only
/*
 * xsksink: AF_XDP RX sink (part of the xdplab.testbed collection).
 *
 * Loads a three-instruction XDP program (assembled here, no clang needed)
 *
 *     return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
 *
 * attaches it to the interface through a BPF link (so it goes away with the
 * process, even on SIGKILL), binds one AF_XDP socket to the queue and counts
 * what arrives, giving every frame straight back to the fill ring.
 *
 * Traffic is cut into bursts: a burst ends when nothing arrived for --gap
 * seconds, and one contract line is printed per burst:
 *   recv <N> packets <B> bits, took <S> sec, <G> gbps <M> mpps
 * The rate is packets over first-to-last arrival. On SIGINT/SIGTERM or after
 * --duration the open burst is printed, then
 *   xsksink: total packets=<N> bytes=<B> bursts=<K>
 * and the socket's XDP_STATISTICS. Exit codes: 0, 1 runtime error, 2 usage.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <getopt.h>
#include <linux/bpf.h>
#include <linux/if_link.h>

#include "xsk_common.h"

#define INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

struct config {
	const char *ifname;
	uint32_t queue, frames, batch;
	uint16_t dport; /* count only IPv4 UDP to this port; 0: any IPv4 UDP */
	double gap, duration;
	int mode, xdp_mode; /* xdp_mode: 0 native, 1 generic, 2 native else generic */
	bool busy_poll;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xsksink --dev IFNAME [options]\n"
		"  -i, --dev IFNAME     interface to receive on (required)\n"
		"  -q, --queue N        queue id (default 0)\n"
		"  -g, --gap SEC        idle time that ends a burst (default 0.25)\n"
		"  -d, --duration SEC   stop after this long (default: until SIGINT/SIGTERM)\n"
		"  -b, --batch N        descriptors per RX pass (default 64)\n"
		"  -B, --busy-poll      busy poll instead of poll()\n"
		"  -c, --copy / -z, --zero-copy   (default: zero-copy where supported)\n"
		"  -x, --xdp-mode M     native, generic or auto (default auto: native, else generic)\n"
		"  -p, --dport PORT     count only IPv4 UDP to PORT (default: any IPv4 UDP)\n"
		"      --frames N       UMEM frames, power of 2 (default 4096)\n"
		"Frames that are not IPv4 UDP (neighbour discovery, ...) are returned uncounted\n"
		"and reported as other_packets.\n");
}

static void parse_args(int argc, char **argv, struct config *c)
{
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, 'i' }, { "queue", required_argument, NULL, 'q' },
		{ "gap", required_argument, NULL, 'g' }, { "duration", required_argument, NULL, 'd' },
		{ "batch", required_argument, NULL, 'b' }, { "busy-poll", no_argument, NULL, 'B' },
		{ "copy", no_argument, NULL, 'c' }, { "zero-copy", no_argument, NULL, 'z' },
		{ "xdp-mode", required_argument, NULL, 'x' }, { "frames", required_argument, NULL, 'F' }, { "dport", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	bool copy = false, zc = false;
	int o;

	memset(c, 0, sizeof(*c));
	c->frames = 4096;
	c->batch = 64;
	c->gap = 0.25;
	c->xdp_mode = 2;
	while ((o = getopt_long(argc, argv, "i:q:g:d:b:Bczx:p:h", opts, NULL)) != -1) {
		switch (o) {
		case 'i': c->ifname = optarg; break;
		case 'q': c->queue = (uint32_t)xl_uint("--queue", optarg, 0, 63); break;
		case 'g': c->gap = xl_seconds("--gap", optarg); break;
		case 'd': c->duration = xl_seconds("--duration", optarg); break;
		case 'b': c->batch = (uint32_t)xl_uint("--batch", optarg, 1, 2048); break;
		case 'B': c->busy_poll = true; break;
		case 'c': copy = true; break;
		case 'z': zc = true; break;
		case 'x':
			if (!strcmp(optarg, "native"))
				c->xdp_mode = 0;
			else if (!strcmp(optarg, "generic"))
				c->xdp_mode = 1;
			else if (!strcmp(optarg, "auto"))
				c->xdp_mode = 2;
			else
				xl_usage_error("--xdp-mode must be native, generic or auto, got '%s'", optarg);
			break;
		case 'F':
			c->frames = (uint32_t)xl_uint("--frames", optarg, 64, 1 << 20);
			if (c->frames & (c->frames - 1))
				xl_usage_error("--frames must be a power of 2, got '%s'", optarg);
			break;
		case 'p': c->dport = (uint16_t)xl_uint("--dport", optarg, 1, 65535); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		xl_usage_error("unexpected argument '%s'", argv[optind]);
	if (!c->ifname)
		xl_usage_error("--dev is required");
	if (copy && zc)
		xl_usage_error("--copy and --zero-copy are mutually exclusive");
	c->mode = copy ? 0 : zc ? 1 : 2;
}

/* Load the redirect-to-XSKMAP program and attach it by a BPF link. Returns the link fd. */
static int attach_prog(const struct config *c, int map_fd, const char **how)
{
	struct bpf_insn insns[] = {
		INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, offsetof(struct xdp_md, rx_queue_index), 0),
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, XDP_PASS),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_redirect_map),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	char log[4096] = "";
	LIBBPF_OPTS(bpf_prog_load_opts, popts, .log_buf = log, .log_size = sizeof(log), .log_level = 1);
	unsigned int ifindex = xl_ifindex(c->ifname);
	int prog_fd, link_fd = -1, err = 0;

	prog_fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "xsksink", "GPL", insns, sizeof(insns) / sizeof(insns[0]),
				&popts);
	if (prog_fd < 0) {
		fprintf(stderr, "xsksink: loading the XDP program failed: %s\n%s", strerror(errno), log);
		return -1;
	}
	for (int generic = c->xdp_mode == 1; generic <= (c->xdp_mode == 0 ? 0 : 1); generic++) {
		LIBBPF_OPTS(bpf_link_create_opts, lopts, .flags = generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);

		link_fd = bpf_link_create(prog_fd, (int)ifindex, BPF_XDP, &lopts);
		if (link_fd >= 0) {
			*how = generic ? "generic" : "native";
			break;
		}
		err = errno;
		if (err == EBUSY || err == EEXIST)
			break;
	}
	close(prog_fd);
	if (link_fd < 0)
		fprintf(stderr, "xsksink: attaching the XDP program to %s failed: %s%s\n", c->ifname,
			strerror(err),
			err == EBUSY || err == EEXIST ? " (another XDP program is attached there: detach it first)" : "");
	return link_fd;
}

int main(int argc, char **argv)
{
	struct config c;
	struct xl_xsk x;
	struct xl_burst burst = { 0 };
	const char *xdp_how = "?";
	uint32_t fq_prod, rx_cons, key;
	uint64_t other = 0;
	double t0, deadline;
	int map_fd, link_fd = -1, rc = 0, fd;

	xl_prog = "xsksink";
	parse_args(argc, argv, &c);
	xl_signals();
	burst.gap = c.gap;
	if (xl_xsk_open(&x, c.ifname, c.queue, c.frames, 4096, 0, c.mode, true, false)) {
		xl_xsk_close(&x);
		return 1;
	}
	if (c.busy_poll && xl_busy_poll(x.fd, 20, c.batch)) {
		xl_xsk_close(&x);
		return 1;
	}
	map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "xdplab_xsks", 4, 4, 64, NULL);
	if (map_fd < 0) {
		fprintf(stderr, "xsksink: creating the XSKMAP failed: %s\n", strerror(errno));
		xl_xsk_close(&x);
		return 1;
	}
	key = c.queue;
	fd = x.fd;
	if (bpf_map_update_elem(map_fd, &key, &fd, 0)) {
		fprintf(stderr, "xsksink: inserting the socket into the XSKMAP failed: %s\n", strerror(errno));
		close(map_fd);
		xl_xsk_close(&x);
		return 1;
	}
	link_fd = attach_prog(&c, map_fd, &xdp_how);
	if (link_fd < 0) {
		close(map_fd);
		xl_xsk_close(&x);
		return 1;
	}
	/* Every frame goes to the fill ring (the ring holds half of them; the rest wait). */
	fq_prod = *x.fq.producer;
	for (uint32_t i = 0; i < x.fq.size; i++)
		((uint64_t *)x.fq.desc)[(fq_prod + i) & x.fq.mask] = (uint64_t)i * x.frame_size;
	fq_prod += x.fq.size;
	xl_store(x.fq.producer, fq_prod);
	rx_cons = *x.rx.consumer;
	printf("xsksink: dev=%s queue=%u mode=%s xdp_mode=%s busy_poll=%d ready\n", c.ifname, c.queue,
	       x.zerocopy ? "zero-copy" : "copy", xdp_how, c.busy_poll);
	fflush(stdout);
	t0 = xl_now();
	deadline = c.duration > 0 ? t0 + c.duration : 0;
	while (!xl_stop) {
		double now = xl_now();
		uint32_t n = xl_load(x.rx.producer) - rx_cons;
		uint64_t bytes = 0, counted = 0;

		if (deadline && now >= deadline)
			break;
		if (!n) {
			xl_burst_tick(&burst, now, "recv");
			if (c.busy_poll || (x.zerocopy && !(xl_load(x.fq.flags) & XDP_RING_NEED_WAKEUP))) {
				recvfrom(x.fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
			} else {
				struct pollfd pfd = { .fd = x.fd, .events = POLLIN };

				if (poll(&pfd, 1, 50) < 0 && errno != EINTR) {
					fprintf(stderr, "xsksink: poll failed: %s\n", strerror(errno));
					rc = 1;
					break;
				}
			}
			continue;
		}
		if (n > c.batch)
			n = c.batch;
		/* The fill ring has room for exactly what is taken off the RX ring. */
		for (uint32_t i = 0; i < n; i++) {
			struct xdp_desc *d = &((struct xdp_desc *)x.rx.desc)[(rx_cons + i) & x.rx.mask];

			const uint8_t *f = x.umem + d->addr;

			if (d->len >= HDRS_LEN && f[12] == 0x08 && f[13] == 0x00 && f[ETH_HDR_LEN + 9] == 17 &&
			    (!c.dport || (f[36] << 8 | f[37]) == c.dport)) {
				bytes += d->len;
				counted++;
			} else {
				other++;
			}
			((uint64_t *)x.fq.desc)[(fq_prod + i) & x.fq.mask] = d->addr & ~((uint64_t)x.frame_size - 1);
		}
		rx_cons += n;
		xl_store(x.rx.consumer, rx_cons);
		fq_prod += n;
		xl_store(x.fq.producer, fq_prod);
		xl_burst_add(&burst, counted, bytes, now);
	}
	xl_burst_flush(&burst, "recv");
	printf("xsksink: total packets=%llu bytes=%llu bursts=%u\n", (unsigned long long)burst.total_packets,
	       (unsigned long long)burst.total_bytes, burst.bursts);
	printf("xsksink: other_packets=%llu\n", (unsigned long long)other);
	xl_print_stats(&x);
	close(link_fd);
	close(map_fd);
	xl_xsk_close(&x);
	return rc;
}
