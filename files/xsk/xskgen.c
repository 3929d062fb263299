// SPDX-License-Identifier: GPL-2.0-only
/*
 * xskgen: AF_XDP TX traffic generator (part of the xdplab.testbed collection).
 *
 * Binds one AF_XDP socket to an interface queue (zero-copy where the driver
 * supports it, else copy mode), fills a UMEM with Ethernet/IPv4/UDP frames
 * and keeps the TX ring full, reclaiming frames from the completion ring.
 * A packet counts as sent when its completion comes back.
 *
 * TX metadata (Linux 6.8+):
 *   -M  reserve a struct xsk_tx_metadata in front of every frame
 *       (XDP_UMEM_TX_METADATA_LEN) and fill it for every descriptor, without
 *       asking the kernel to act on it: the cost of the area alone;
 *   -m  also set XDP_TX_METADATA on every descriptor, requesting a TX
 *       timestamp and UDP checksum offload. Whether the driver filled the
 *       timestamp is counted from the completions and printed; a kernel
 *       without TX metadata fails with a message saying so.
 *
 * Output (stdout): the xskgen contract line
 *   sent <N> packets <B> bits, took <S> sec, <G> gbps <M> mpps
 * (one per --interval when given, else one for the run) and information
 * lines "xskgen: key=value ...". Exit codes: 0 success (also after
 * SIGINT/SIGTERM), 1 runtime error, 2 bad command line.
 */
#include <getopt.h>

#include "xsk_common.h"

#define XSKGEN_VERSION "1.0.0"

struct config {
	const char *ifname;
	uint32_t queue, frames, frame_size, batch;
	uint64_t count;
	double duration, interval;
	size_t size;
	int mode; /* 0 copy, 1 zero-copy, 2 auto */
	bool busy_poll, md_fill, md_request;
	struct xl_flow flow;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xskgen --dev IFNAME [options]\n"
		"  -i, --dev IFNAME        interface to send on (required)\n"
		"  -q, --queue N           queue id (default 0)\n"
		"  -s, --size BYTES        frame size without FCS, 60.. (default 64)\n"
		"  -n, --count N           packets to send, or\n"
		"  -d, --duration SEC      seconds to send (default 5)\n"
		"  -b, --batch N           descriptors per TX kick (default 64)\n"
		"  -B, --busy-poll         SO_PREFER_BUSY_POLL + SO_BUSY_POLL 20us, budget = batch\n"
		"  -c, --copy              copy mode; -z, --zero-copy: zero-copy or fail;\n"
		"                          default: zero-copy where supported, else copy\n"
		"  -M, --tx-metadata-fill  reserve and fill TX metadata (no request)\n"
		"  -m, --tx-metadata       request TX metadata: timestamp + checksum offload\n"
		"  -I, --interval SEC      print one line per interval\n"
		"      --frames N          UMEM frames, power of 2 (default 4096)\n"
		"      --dst-mac, --src-mac MAC, --src-ip, --dst-ip A.B.C.D,\n"
		"      --sport, --dport PORT, --flows N (source ports sport..sport+N-1)\n"
		"  -V, --version, -h, --help\n");
}

static void parse_args(int argc, char **argv, struct config *c)
{
	enum { O_FRAMES = 256, O_DMAC, O_SMAC, O_SIP, O_DIP, O_SPORT, O_DPORT, O_FLOWS };
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, 'i' }, { "queue", required_argument, NULL, 'q' },
		{ "size", required_argument, NULL, 's' }, { "count", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'd' }, { "batch", required_argument, NULL, 'b' },
		{ "busy-poll", no_argument, NULL, 'B' }, { "copy", no_argument, NULL, 'c' },
		{ "zero-copy", no_argument, NULL, 'z' }, { "tx-metadata-fill", no_argument, NULL, 'M' },
		{ "tx-metadata", no_argument, NULL, 'm' }, { "interval", required_argument, NULL, 'I' },
		{ "frames", required_argument, NULL, O_FRAMES }, { "dst-mac", required_argument, NULL, O_DMAC },
		{ "src-mac", required_argument, NULL, O_SMAC }, { "src-ip", required_argument, NULL, O_SIP },
		{ "dst-ip", required_argument, NULL, O_DIP }, { "sport", required_argument, NULL, O_SPORT },
		{ "dport", required_argument, NULL, O_DPORT }, { "flows", required_argument, NULL, O_FLOWS },
		{ "version", no_argument, NULL, 'V' }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	bool copy = false, zc = false, have_count = false, have_duration = false;
	int o;

	memset(c, 0, sizeof(*c));
	c->frames = 4096;
	c->frame_size = 4096;
	c->batch = 64;
	c->size = 64;
	c->duration = 5;
	c->mode = 2;
	memset(c->flow.dst_mac, 0xff, 6);
	memcpy(c->flow.src_mac, "\x02\x00\x00\x00\x00\x01", 6);
	inet_pton(AF_INET, "198.18.0.1", &c->flow.src_ip);
	inet_pton(AF_INET, "198.18.0.2", &c->flow.dst_ip);
	c->flow.sport = c->flow.dport = 9;
	c->flow.flows = 1;
	while ((o = getopt_long(argc, argv, "i:q:s:n:d:b:BczMmI:Vh", opts, NULL)) != -1) {
		switch (o) {
		case 'i': c->ifname = optarg; break;
		case 'q': c->queue = (uint32_t)xl_uint("--queue", optarg, 0, 65535); break;
		case 's': c->size = (size_t)xl_uint("--size", optarg, MIN_FRAME, 4096); break;
		case 'n': c->count = xl_uint("--count", optarg, 1, UINT64_MAX); have_count = true; break;
		case 'd': c->duration = xl_seconds("--duration", optarg); have_duration = true; break;
		case 'b': c->batch = (uint32_t)xl_uint("--batch", optarg, 1, 2048); break;
		case 'B': c->busy_poll = true; break;
		case 'c': copy = true; break;
		case 'z': zc = true; break;
		case 'M': c->md_fill = true; break;
		case 'm': c->md_request = c->md_fill = true; break;
		case 'I': c->interval = xl_seconds("--interval", optarg); break;
		case O_FRAMES:
			c->frames = (uint32_t)xl_uint("--frames", optarg, 64, 1 << 20);
			if (c->frames & (c->frames - 1))
				xl_usage_error("--frames must be a power of 2, got '%s'", optarg);
			break;
		case O_DMAC:
		case O_SMAC:
			if (xl_mac(optarg, o == O_DMAC ? c->flow.dst_mac : c->flow.src_mac))
				xl_usage_error("%s must be a MAC address like 02:00:00:00:00:01, got '%s'",
					       o == O_DMAC ? "--dst-mac" : "--src-mac", optarg);
			break;
		case O_SIP:
		case O_DIP:
			if (inet_pton(AF_INET, optarg, o == O_SIP ? &c->flow.src_ip : &c->flow.dst_ip) != 1)
				xl_usage_error("%s must be an IPv4 address, got '%s'",
					       o == O_SIP ? "--src-ip" : "--dst-ip", optarg);
			break;
		case O_SPORT: c->flow.sport = (uint16_t)xl_uint("--sport", optarg, 1, 65535); break;
		case O_DPORT: c->flow.dport = (uint16_t)xl_uint("--dport", optarg, 1, 65535); break;
		case O_FLOWS: c->flow.flows = (uint16_t)xl_uint("--flows", optarg, 1, 65535); break;
		case 'V': printf("xskgen %s\n", XSKGEN_VERSION); exit(0);
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		xl_usage_error("unexpected argument '%s'", argv[optind]);
	if (!c->ifname)
		xl_usage_error("--dev is required");
	if (have_count && have_duration)
		xl_usage_error("--count and --duration are mutually exclusive");
	if (have_count)
		c->duration = 0;
	if (copy && zc)
		xl_usage_error("--copy and --zero-copy are mutually exclusive");
	c->mode = copy ? 0 : zc ? 1 : 2;
	if ((uint32_t)c->flow.sport + c->flow.flows - 1 > 65535)
		xl_usage_error("--flows %u with --sport %u runs past port 65535", c->flow.flows, c->flow.sport);
	if (c->size + (c->md_fill ? sizeof(struct xl_tx_metadata) : 0) > c->frame_size)
		xl_usage_error("--size %zu does not fit a %u-byte UMEM frame%s", c->size, c->frame_size,
			       c->md_fill ? " with the TX metadata area" : "");
}

static int kick(struct xl_xsk *x)
{
	if (x->zerocopy && !(xl_load(x->tx.flags) & XDP_RING_NEED_WAKEUP))
		return 0;
	if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
		return 0;
	switch (errno) {
	case EAGAIN:
	case EBUSY:
	case ENOBUFS:
	case EINTR:
		return 0;
	default:
		return -1;
	}
}

int main(int argc, char **argv)
{
	struct config c;
	struct xl_xsk x;
	uint32_t md_len, tx_prod, cq_cons;
	uint64_t submitted = 0, completed = 0, ts_filled = 0, iv_packets = 0, md_request_word, ts_last = 0;
	struct xl_tx_metadata md_tmpl = { .flags = XL_TXMD_FLAGS_TIMESTAMP | XL_TXMD_FLAGS_CHECKSUM };
	double t0, t_last, t_iv, deadline;
	int rc = 0;

	xl_prog = "xskgen";
	parse_args(argc, argv, &c);
	xl_signals();
	md_tmpl.request.csum_start = ETH_HDR_LEN + IP_HDR_LEN;
	md_tmpl.request.csum_offset = 6;
	memcpy(&md_request_word, &md_tmpl.request, sizeof(md_request_word));
	md_len = c.md_fill ? (uint32_t)sizeof(struct xl_tx_metadata) : 0;
	if (xl_xsk_open(&x, c.ifname, c.queue, c.frames, c.frame_size, md_len, c.mode, false, true)) {
		xl_xsk_close(&x);
		return 1;
	}
	if (c.busy_poll && xl_busy_poll(x.fd, 20, c.batch)) {
		xl_xsk_close(&x);
		return 1;
	}
	for (uint32_t i = 0; i < c.frames; i++)
		xl_build_frame(x.umem + (size_t)i * c.frame_size + md_len, c.size, &c.flow, i % c.flow.flows,
			       c.md_request ? 2 : 0);
	printf("xskgen: dev=%s queue=%u mode=%s size=%zu batch=%u busy_poll=%d tx_metadata=%s\n", c.ifname,
	       c.queue, x.zerocopy ? "zero-copy" : "copy", c.size, c.batch, c.busy_poll,
	       c.md_request ? "request" : c.md_fill ? "fill" : "off");
	if (!x.zerocopy)
		printf("xskgen: mode_note=\"%s\"\n", x.mode_note);
	tx_prod = *x.tx.producer;
	cq_cons = *x.cq.consumer;
	t0 = t_last = t_iv = xl_now();
	deadline = c.duration > 0 ? t0 + c.duration : 0;
	for (;;) {
		double now = xl_now();
		uint32_t n = xl_load(x.cq.producer) - cq_cons;
		bool done = xl_stop || (c.count && submitted >= c.count) || (deadline && now >= deadline);

		if (n) {
			for (uint32_t i = 0; c.md_request && i < n; i++) {
				uint64_t addr = ((uint64_t *)x.cq.desc)[(cq_cons + i) & x.cq.mask];
				struct xl_tx_metadata *md = (void *)(x.umem + addr - md_len);

				/* The request's first 8 bytes share the union with the completion
				 * timestamp: unchanged means the kernel wrote no timestamp. */
				if (md->completion.tx_timestamp != 0 &&
				    md->completion.tx_timestamp != md_request_word) {
					ts_filled++;
					ts_last = md->completion.tx_timestamp;
				}
			}
			cq_cons += n;
			xl_store(x.cq.consumer, cq_cons);
			completed += n;
			iv_packets += n;
			t_last = now;
		}
		if (c.interval && now - t_iv >= c.interval) {
			xl_report("sent", iv_packets, iv_packets * c.size, now - t_iv);
			iv_packets = 0;
			t_iv = now;
		}
		if (done) {
			if (completed == submitted)
				break;
			if (now - t_last > 1.0) {
				fprintf(stderr, "xskgen: %llu descriptors never completed\n",
					(unsigned long long)(submitted - completed));
				break;
			}
		} else {
			uint32_t free_tx = x.tx.size - (tx_prod - xl_load(x.tx.consumer));
			uint64_t room = c.frames - (submitted - completed), want = c.batch;

			if (want > free_tx)
				want = free_tx;
			if (want > room)
				want = room;
			if (c.count && want > c.count - submitted)
				want = c.count - submitted;
			for (uint32_t i = 0; i < want; i++) {
				uint32_t frame = (uint32_t)((submitted + i) & (c.frames - 1));
				struct xdp_desc *d = &((struct xdp_desc *)x.tx.desc)[(tx_prod + i) & x.tx.mask];

				d->addr = (uint64_t)frame * c.frame_size + md_len;
				d->len = (uint32_t)c.size;
				d->options = c.md_request ? XDP_TX_METADATA : 0;
				if (c.md_fill) {
					struct xl_tx_metadata *md = (void *)(x.umem + (size_t)frame * c.frame_size);

					*md = md_tmpl;
				}
			}
			if (want) {
				tx_prod += (uint32_t)want;
				xl_store(x.tx.producer, tx_prod);
				submitted += want;
			}
		}
		if (submitted != completed && kick(&x)) {
			fprintf(stderr, "xskgen: TX kick (sendto) on %s failed: %s\n", c.ifname, strerror(errno));
			rc = 1;
			break;
		}
	}
	if (c.interval) {
		if (iv_packets)
			xl_report("sent", iv_packets, iv_packets * c.size, t_last - t_iv > 0 ? t_last - t_iv : 1e-6);
	} else {
		xl_report("sent", completed, completed * c.size, t_last > t0 ? t_last - t0 : 1e-6);
	}
	xl_print_stats(&x);
	if (c.md_request)
		printf("xskgen: tx_metadata completions=%llu tx_timestamp_filled=%llu last_tx_timestamp=%llu%s\n",
		       (unsigned long long)completed, (unsigned long long)ts_filled, (unsigned long long)ts_last,
		       ts_filled ? "" : " (the driver does not fill TX timestamps for this socket)");
	if (!completed && !rc) {
		fprintf(stderr, "xskgen: no packet completed on %s (interface down or every descriptor refused)\n",
			c.ifname);
		rc = 1;
	}
	xl_xsk_close(&x);
	return rc;
}
