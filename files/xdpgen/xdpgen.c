// SPDX-License-Identifier: GPL-2.0-only
/*
 * xdpgen: live-frame XDP traffic generator (part of the xdplab.testbed collection).
 *
 * It loads a tiny XDP program, assembled here from raw BPF instructions so no
 * clang is needed:
 *
 *     return bpf_redirect(IFINDEX, 0);
 *
 * (with --flows N > 1 the program first rewrites the UDP source port to
 * sport + prandom() % N), then runs it with BPF_PROG_RUN in
 * BPF_F_TEST_XDP_LIVE_FRAMES mode: the kernel builds real xdp_frames from the
 * crafted Ethernet/IPv4/UDP frame and the redirect transmits them through the
 * interface's ndo_xdp_xmit, as xdp-trafficgen does. One pthread per CPU runs
 * the BPF_PROG_RUN loop until --count or --duration is reached or a
 * SIGINT/SIGTERM arrives; the figures are printed in every case.
 *
 * Where the kernel refuses live frames (before 5.18, or a kernel that denies
 * them: EPERM, EINVAL or EOPNOTSUPP on a probe that sends nothing), --mode auto
 * (the default) sends the same frames from an AF_PACKET socket instead
 * (PACKET_QDISC_BYPASS, sendmmsg in batches of up to 64, the source port drawn
 * per frame for --flows), says so on stderr, and names the mode on the summary
 * line. --mode live fails there; --mode packet always uses the socket.
 *
 * Packet size (-s) counts the Ethernet header and the payload, NOT the 4-byte
 * FCS: -s 60 is the minimum Ethernet frame (64 bytes on the wire with FCS).
 * bytes = packets * pkt_size; gbps = bytes * 8 / seconds / 1e9 (no FCS,
 * preamble or inter-frame gap).
 *
 * Output contract (stdout), read by plugins/module_utils/traffic/_output_parsers.py:
 *   xdpgen: thread <i> cpu <c> packets <N> seconds <S> pps <P>      (one per thread)
 *   xdpgen: packets=<N> bytes=<B> seconds=<S> pps=<P> gbps=<G> threads=<T> pkt_size=<Z> mode=<live|packet>
 * Exit codes: 0 success (also after SIGINT/SIGTERM), 1 runtime error,
 * 2 bad command line.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define XDPGEN_VERSION "1.2.0"

#define EXIT_USAGE 2
#define ETH_HDR_LEN 14
#define IP_HDR_LEN 20
#define UDP_HDR_LEN 8
#define MIN_PKT_SIZE 60
/* BPF_PROG_RUN live mode puts each frame in one page after its xdp_page_head
 * (two xdp_buffs and the xdp_frame) and XDP_PACKET_HEADROOM, before the
 * skb_shared_info tailroom: 4096 - 112 - 256 - 320 = 3408 bytes on 6.x x86_64
 * (measured: 3408 accepted, 3409 refused with EINVAL). */
#define MAX_LIVE_FRAME 3408
#define MAX_THREADS 256
#define MAX_BATCH (1U << 24)
#define KERNEL_BATCH_MAX 256 /* NAPI_POLL_WEIGHT, the kernel's own limit */
#define SPORT_OFF (ETH_HDR_LEN + IP_HDR_LEN)
#define PACKET_BATCH 64 /* frames per sendmmsg() / TX ring kick in packet mode, by default */
#define PACKET_BATCH_MAX 1024
#define RING_FRAMES 4096 /* frames of the PACKET_TX_RING */
#define MAX_RATE 1e9
/* Paced sending (--rate): a thread sends at most one slice per pacing step and never makes up more
 * than this many seconds of lag at once (a late wake-up does not become a burst). */
#define PACE_STEP_PACKET 50e-6
#define PACE_STEP_LIVE 500e-6
#define PACE_MAX_LAG 50e-3
#ifndef ENOTSUPP
#define ENOTSUPP 524 /* the kernel's internal "not supported", seen by user space */
#endif

enum mode { MODE_AUTO, MODE_LIVE, MODE_PACKET };
enum packet_tx { TX_RING, TX_MMSG };
static const char *const packet_tx_names[] = { "ring", "mmsg" };
static const char *const mode_names[] = { "auto", "live", "packet" };

struct config {
	const char *dev;
	unsigned int ifindex;
	unsigned int pkt_size;
	unsigned long long count;  /* 0: use duration */
	double duration;           /* seconds */
	unsigned int threads;
	unsigned int cpu;
	unsigned int batch;        /* BPF_PROG_RUN repeat per call */
	unsigned int kernel_batch; /* frames per kernel-side batch (opts.batch_size) */
	uint8_t dst_mac[6], src_mac[6];
	bool have_src_mac, have_dst_mac;
	struct in_addr src_ip, dst_ip;
	unsigned int sport, dport, flows;
	bool quiet;
	bool no_pin;
	enum mode mode;            /* after the probe: MODE_LIVE or MODE_PACKET */
	enum packet_tx packet_tx;  /* packet mode: PACKET_TX_RING or sendmmsg() */
	bool have_batch;
	double rate;               /* packets/s over all threads, 0: as fast as possible */
	double interval;           /* seconds between interval lines, 0: none */
};

struct worker {
	pthread_t tid;
	unsigned int idx, cpu;
	unsigned long long quota; /* packets to send, 0: until stopped */
	unsigned long long packets; /* written by the worker, read by the interval printer */
	double rate;              /* this thread's share of --rate, 0: unpaced */
	struct timespec start, end;
	int err;                  /* errno of a failed BPF_PROG_RUN or send, 0 if none */
	bool started;
	bool joined;
};

static const struct config *cfg;
static int prog_fd = -1;
static uint8_t frame[MAX_LIVE_FRAME];
static atomic_bool stop_flag;
static struct timespec deadline;
static pthread_barrier_t start_barrier;

/* ------------------------------------------------------------------ */
/* Command line                                                       */

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xdpgen -i IFACE [options]\n"
		"Live-frame XDP traffic generator (BPF_PROG_RUN + BPF_F_TEST_XDP_LIVE_FRAMES).\n"
		"Sends Ethernet/IPv4/UDP frames out of IFACE via XDP redirect. Run it as root\n"
		"in IFACE's network namespace.\n\n"
		"  -i, --dev IFACE      interface to send on (required)\n"
		"  -s, --size BYTES     frame size incl. Ethernet header, excl. FCS\n"
		"                       (%d..min(MTU+14, %d); default 64)\n"
		"  -n, --count N        send N packets in total (split over threads)\n"
		"  -d, --duration SEC   send for SEC seconds (default 5; excl. --count)\n"
		"  -t, --threads N      sending threads, one per CPU (default 1)\n"
		"  -c, --cpu N          first CPU; thread i runs on CPU N+i (default 0)\n"
		"  -b, --batch N        packets per BPF_PROG_RUN call (default 65536); in\n"
		"                       packet mode frames per send, 1..%d (default %d)\n"
		"  -r, --rate PPS       send PPS packets/s in total (split over threads),\n"
		"                       paced evenly; default: as fast as possible\n"
		"      --interval SEC   print the packets sent in every SEC seconds\n"
		"  -k, --kernel-batch N frames per kernel-side batch, 1..%d (default 64)\n"
		"      --dst-mac MAC    destination MAC (default ff:ff:ff:ff:ff:ff)\n"
		"      --src-mac MAC    source MAC (default IFACE's address)\n"
		"      --src-ip IP      source IPv4 address (default 198.18.0.1)\n"
		"      --dst-ip IP      destination IPv4 address (default 198.18.0.2)\n"
		"      --sport PORT     UDP source port (default 9)\n"
		"      --dport PORT     UDP destination port (default 9)\n"
		"      --flows N        vary the source port over N values from --sport\n"
		"                       (random per packet; default 1)\n"
		"      --no-pin         do not keep the program in the XDP dispatcher\n"
		"                       (each BPF_PROG_RUN call then costs ~20 ms extra)\n"
		"  -m, --mode MODE      auto (default): live frames, or an AF_PACKET socket\n"
		"                       where the kernel refuses them; live; packet\n"
		"      --packet-tx HOW  packet mode: ring (PACKET_TX_RING, default) or\n"
		"                       mmsg (sendmmsg)\n"
		"  -q, --quiet          no informational messages on stderr\n"
		"  -V, --version        print the version and exit\n"
		"  -h, --help           print this help and exit\n\n"
		"Output (stdout), one line per thread then one summary line:\n"
		"  xdpgen: thread <i> cpu <c> packets <N> seconds <S> pps <P>\n"
		"  xdpgen: packets=<N> bytes=<B> seconds=<S> pps=<P> gbps=<G> threads=<T> pkt_size=<Z>\n"
		"          mode=<live|packet> rate=<PPS asked|max> (on the same line)\n"
		"With --interval, before them: xdpgen: interval <t> packets <N> pps <P>\n"
		"SIGINT/SIGTERM stop early; the figures so far are still printed.\n"
		"Exit status: 0 ok, 1 runtime error, 2 bad command line.\n",
		MIN_PKT_SIZE, MAX_LIVE_FRAME, PACKET_BATCH_MAX, PACKET_BATCH, KERNEL_BATCH_MAX);
}

static void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("xdpgen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'xdpgen --help'.\n", stderr);
	exit(EXIT_USAGE);
}

/* Parse an unsigned decimal integer in [min, max] or exit 2 naming option and value. */
static unsigned long long parse_uint(const char *opt, const char *val,
				     unsigned long long min, unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!val[0] || val[0] == '-' || val[0] == '+' || val[0] == ' ')
		usage_error("invalid value '%s' for %s: must be an integer in %llu..%llu",
			    val, opt, min, max);
	v = strtoull(val, &end, 10);
	if (errno || *end)
		usage_error("invalid value '%s' for %s: must be an integer in %llu..%llu",
			    val, opt, min, max);
	if (v < min || v > max)
		usage_error("value '%s' for %s out of range: must be in %llu..%llu",
			    val, opt, min, max);
	return v;
}

static double parse_seconds(const char *opt, const char *val)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(val, &end);
	if (!val[0] || errno || *end || !(v > 0.0) || v > 31536000.0)
		usage_error("invalid value '%s' for %s: must be a number of seconds in (0, 31536000]",
			    val, opt);
	return v;
}

static double parse_rate(const char *opt, const char *val)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(val, &end);
	if (!val[0] || errno || *end || !(v >= 1.0) || v > MAX_RATE)
		usage_error("invalid value '%s' for %s: must be a rate in packets/s in 1..%.0f",
			    val, opt, MAX_RATE);
	return v;
}

static void parse_mac(const char *opt, const char *val, uint8_t mac[6])
{
	unsigned int b[6];
	int n = 0;

	if (strlen(val) != 17 ||
	    sscanf(val, "%2x:%2x:%2x:%2x:%2x:%2x%n", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &n) != 6 || n != 17)
		usage_error("invalid value '%s' for %s: must be a MAC address like 02:00:00:00:00:01",
			    val, opt);
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
}

static void parse_ip(const char *opt, const char *val, struct in_addr *addr)
{
	if (inet_pton(AF_INET, val, addr) != 1)
		usage_error("invalid value '%s' for %s: must be an IPv4 address", val, opt);
}

enum { OPT_DST_MAC = 256, OPT_SRC_MAC, OPT_SRC_IP, OPT_DST_IP, OPT_SPORT, OPT_DPORT, OPT_FLOWS, OPT_NO_PIN,
       OPT_INTERVAL, OPT_PACKET_TX };

static const struct option long_opts[] = {
	{ "dev", required_argument, NULL, 'i' },
	{ "size", required_argument, NULL, 's' },
	{ "count", required_argument, NULL, 'n' },
	{ "duration", required_argument, NULL, 'd' },
	{ "threads", required_argument, NULL, 't' },
	{ "cpu", required_argument, NULL, 'c' },
	{ "batch", required_argument, NULL, 'b' },
	{ "kernel-batch", required_argument, NULL, 'k' },
	{ "dst-mac", required_argument, NULL, OPT_DST_MAC },
	{ "src-mac", required_argument, NULL, OPT_SRC_MAC },
	{ "src-ip", required_argument, NULL, OPT_SRC_IP },
	{ "dst-ip", required_argument, NULL, OPT_DST_IP },
	{ "sport", required_argument, NULL, OPT_SPORT },
	{ "dport", required_argument, NULL, OPT_DPORT },
	{ "flows", required_argument, NULL, OPT_FLOWS },
	{ "no-pin", no_argument, NULL, OPT_NO_PIN },
	{ "mode", required_argument, NULL, 'm' },
	{ "rate", required_argument, NULL, 'r' },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "packet-tx", required_argument, NULL, OPT_PACKET_TX },
	{ "quiet", no_argument, NULL, 'q' },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char *opt_name(int c)
{
	for (const struct option *o = long_opts; o->name; o++)
		if (o->val == c)
			return o->name;
	return "?";
}

/* Text of the option as the user could have typed it, for messages. */
static const char *opt_label(int c, char *buf, size_t len)
{
	if (c < 256)
		snprintf(buf, len, "-%c/--%s", c, opt_name(c));
	else
		snprintf(buf, len, "--%s", opt_name(c));
	return buf;
}

static void parse_args(int argc, char **argv, struct config *c)
{
	bool have_count = false, have_duration = false;
	char label[40];
	int opt;

	memset(c, 0, sizeof(*c));
	c->pkt_size = 64;
	c->duration = 5.0;
	c->threads = 1;
	c->batch = 65536;
	c->kernel_batch = 64;
	memset(c->dst_mac, 0xff, 6);
	inet_pton(AF_INET, "198.18.0.1", &c->src_ip);
	inet_pton(AF_INET, "198.18.0.2", &c->dst_ip);
	c->sport = 9;
	c->dport = 9;
	c->flows = 1;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":i:s:n:d:t:c:b:k:m:r:qVh", long_opts, NULL)) != -1) {
		const char *l = opt_label(opt, label, sizeof(label));

		switch (opt) {
		case 'i':
			if (!optarg[0] || strlen(optarg) >= IF_NAMESIZE)
				usage_error("invalid value '%s' for %s: not an interface name", optarg, l);
			c->dev = optarg;
			break;
		case 's':
			/* Range depends on the MTU: checked once the interface is known. */
			parse_uint(l, optarg, MIN_PKT_SIZE, MAX_LIVE_FRAME);
			c->pkt_size = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			c->count = parse_uint(l, optarg, 1, ULLONG_MAX);
			have_count = true;
			break;
		case 'd':
			c->duration = parse_seconds(l, optarg);
			have_duration = true;
			break;
		case 't':
			c->threads = (unsigned int)parse_uint(l, optarg, 1, MAX_THREADS);
			break;
		case 'c':
			c->cpu = (unsigned int)parse_uint(l, optarg, 0, CPU_SETSIZE - 1);
			break;
		case 'b':
			c->batch = (unsigned int)parse_uint(l, optarg, 1, MAX_BATCH);
			c->have_batch = true;
			break;
		case 'r':
			c->rate = parse_rate(l, optarg);
			break;
		case OPT_INTERVAL:
			c->interval = parse_seconds(l, optarg);
			break;
		case OPT_PACKET_TX:
			if (!strcmp(optarg, "ring"))
				c->packet_tx = TX_RING;
			else if (!strcmp(optarg, "mmsg"))
				c->packet_tx = TX_MMSG;
			else
				usage_error("invalid value '%s' for %s: must be ring or mmsg", optarg, l);
			break;
		case 'k':
			c->kernel_batch = (unsigned int)parse_uint(l, optarg, 1, KERNEL_BATCH_MAX);
			break;
		case OPT_DST_MAC:
			parse_mac(l, optarg, c->dst_mac);
			c->have_dst_mac = true;
			break;
		case OPT_SRC_MAC:
			parse_mac(l, optarg, c->src_mac);
			c->have_src_mac = true;
			break;
		case OPT_SRC_IP:
			parse_ip(l, optarg, &c->src_ip);
			break;
		case OPT_DST_IP:
			parse_ip(l, optarg, &c->dst_ip);
			break;
		case OPT_SPORT:
			c->sport = (unsigned int)parse_uint(l, optarg, 1, 65535);
			break;
		case OPT_DPORT:
			c->dport = (unsigned int)parse_uint(l, optarg, 1, 65535);
			break;
		case OPT_FLOWS:
			c->flows = (unsigned int)parse_uint(l, optarg, 1, 65535);
			break;
		case OPT_NO_PIN:
			c->no_pin = true;
			break;
		case 'm':
			if (!strcmp(optarg, "auto"))
				c->mode = MODE_AUTO;
			else if (!strcmp(optarg, "live"))
				c->mode = MODE_LIVE;
			else if (!strcmp(optarg, "packet"))
				c->mode = MODE_PACKET;
			else
				usage_error("invalid value '%s' for %s: must be auto, live or packet", optarg, l);
			break;
		case 'q':
			c->quiet = true;
			break;
		case 'V':
			printf("xdpgen %s\n", XDPGEN_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			usage_error("option '%s' requires a value", argv[optind - 1]);
		default:
			usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (!c->dev)
		usage_error("missing required option -i/--dev IFACE");
	if (have_count && have_duration)
		usage_error("options -n/--count and -d/--duration are mutually exclusive");
	if (!have_count)
		c->count = 0;
	if (c->sport + c->flows - 1 > 65535)
		usage_error("invalid value '%u' for --flows: --sport %u + --flows - 1 exceeds 65535",
			    c->flows, c->sport);
	if (c->rate && c->rate < c->threads)
		usage_error("value '%g' for -r/--rate is smaller than -t/--threads %u (1 packet/s each)",
			    c->rate, c->threads);
	if (c->count && c->count < c->threads)
		usage_error("value '%llu' for -n/--count is smaller than -t/--threads %u",
			    c->count, c->threads);
	{
		long ncpu = sysconf(_SC_NPROCESSORS_CONF);

		if (ncpu > 0 && (long)c->cpu + c->threads > ncpu)
			usage_error("-c/--cpu %u with -t/--threads %u needs CPUs %u..%u, "
				    "this machine has CPUs 0..%ld",
				    c->cpu, c->threads, c->cpu, c->cpu + c->threads - 1, ncpu - 1);
	}
}

/* ------------------------------------------------------------------ */
/* Interface and frame                                                */

static int iface_info(struct config *c)
{
	struct ifreq ifr;
	int fd, ret = 0;
	unsigned int max_size;

	c->ifindex = if_nametoindex(c->dev);
	if (!c->ifindex)
		usage_error("invalid value '%s' for -i/--dev: no such interface in this network "
			    "namespace", c->dev);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("xdpgen: socket");
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", c->dev);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
		fprintf(stderr, "xdpgen: SIOCGIFMTU %s: %s\n", c->dev, strerror(errno));
		ret = -1;
		goto out;
	}
	max_size = (unsigned int)ifr.ifr_mtu + ETH_HDR_LEN;
	if (max_size > MAX_LIVE_FRAME)
		max_size = MAX_LIVE_FRAME;
	if (c->pkt_size > max_size)
		usage_error("value '%u' for -s/--size out of range: must be in %d..%u "
			    "(MTU %d of %s + 14, at most %d for live frames)",
			    c->pkt_size, MIN_PKT_SIZE, max_size, ifr.ifr_mtu, c->dev, MAX_LIVE_FRAME);
	if (!c->have_src_mac) {
		if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
			fprintf(stderr, "xdpgen: SIOCGIFHWADDR %s: %s\n", c->dev, strerror(errno));
			ret = -1;
			goto out;
		}
		memcpy(c->src_mac, ifr.ifr_hwaddr.sa_data, 6);
	}
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		fprintf(stderr, "xdpgen: SIOCGIFFLAGS %s: %s\n", c->dev, strerror(errno));
		ret = -1;
		goto out;
	}
	if (!(ifr.ifr_flags & IFF_UP)) {
		fprintf(stderr, "xdpgen: interface %s is down\n", c->dev);
		ret = -1;
	} else if (!(ifr.ifr_flags & IFF_RUNNING) && !c->quiet) {
		fprintf(stderr, "xdpgen: warning: %s has no carrier, frames may be dropped\n", c->dev);
	}
out:
	close(fd);
	return ret;
}

static uint16_t ip_checksum(const void *hdr, size_t len)
{
	const uint8_t *p = hdr;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

static void build_frame(const struct config *c)
{
	uint8_t *p = frame;
	uint16_t ip_len = (uint16_t)(c->pkt_size - ETH_HDR_LEN);
	uint16_t udp_len = (uint16_t)(ip_len - IP_HDR_LEN);
	uint8_t *ip = p + ETH_HDR_LEN, *udp = ip + IP_HDR_LEN;
	uint16_t v;

	memset(frame, 0, sizeof(frame));
	memcpy(p, c->dst_mac, 6);
	memcpy(p + 6, c->src_mac, 6);
	p[12] = 0x08; /* ETH_P_IP */
	p[13] = 0x00;

	ip[0] = 0x45;            /* version 4, IHL 5 */
	ip[1] = 0;               /* TOS */
	v = htons(ip_len);
	memcpy(ip + 2, &v, 2);
	/* id 0, flags DF */
	ip[6] = 0x40;
	ip[8] = 64;              /* TTL */
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &c->src_ip, 4);
	memcpy(ip + 16, &c->dst_ip, 4);
	v = ip_checksum(ip, IP_HDR_LEN);
	memcpy(ip + 10, &v, 2);

	v = htons((uint16_t)c->sport);
	memcpy(udp, &v, 2);
	v = htons((uint16_t)c->dport);
	memcpy(udp + 2, &v, 2);
	v = htons(udp_len);
	memcpy(udp + 4, &v, 2);
	/* UDP checksum 0: none (legal for IPv4). Payload: a recognisable pattern. */
	for (unsigned int i = SPORT_OFF + UDP_HDR_LEN; i < c->pkt_size; i++)
		frame[i] = (uint8_t)i;
}

/* ------------------------------------------------------------------ */
/* The XDP program, from raw instructions                             */

#define INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define MOV64_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define MOV64_REG(d, s) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define ADD64_IMM(d, i) INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define ADD32_IMM(d, i) INSN(BPF_ALU | BPF_ADD | BPF_K, d, 0, 0, i)
#define MOD32_IMM(d, i) INSN(BPF_ALU | BPF_MOD | BPF_K, d, 0, 0, i)
#define BE16(d) INSN(BPF_ALU | BPF_END | BPF_TO_BE, d, 0, 0, 16)
#define LDX_W(d, s, o) INSN(BPF_LDX | BPF_MEM | BPF_W, d, s, o, 0)
#define STX_H(d, s, o) INSN(BPF_STX | BPF_MEM | BPF_H, d, s, o, 0)
#define JGT_REG(d, s, o) INSN(BPF_JMP | BPF_JGT | BPF_X, d, s, o, 0)
#define CALL(f) INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT() INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

static int load_prog(const struct config *c)
{
	struct bpf_insn insns[16];
	char log[4096] = "";
	int n = 0, fd;

	LIBBPF_OPTS(bpf_prog_load_opts, opts, .log_buf = log, .log_size = sizeof(log),
		    .log_level = 0);

	if (c->flows > 1) {
		/* sport = htons(sport_base + prandom() % flows), if the frame is long enough */
		insns[n++] = MOV64_REG(BPF_REG_6, BPF_REG_1);
		insns[n++] = LDX_W(BPF_REG_7, BPF_REG_6, offsetof(struct xdp_md, data));
		insns[n++] = LDX_W(BPF_REG_8, BPF_REG_6, offsetof(struct xdp_md, data_end));
		insns[n++] = MOV64_REG(BPF_REG_1, BPF_REG_7);
		insns[n++] = ADD64_IMM(BPF_REG_1, SPORT_OFF + 2);
		insns[n++] = JGT_REG(BPF_REG_1, BPF_REG_8, 5);
		insns[n++] = CALL(BPF_FUNC_get_prandom_u32);
		insns[n++] = MOD32_IMM(BPF_REG_0, (int)c->flows);
		insns[n++] = ADD32_IMM(BPF_REG_0, (int)c->sport);
		insns[n++] = BE16(BPF_REG_0);
		insns[n++] = STX_H(BPF_REG_7, BPF_REG_0, SPORT_OFF);
	}
	insns[n++] = MOV64_IMM(BPF_REG_1, (int)c->ifindex);
	insns[n++] = MOV64_IMM(BPF_REG_2, 0);
	insns[n++] = CALL(BPF_FUNC_redirect);
	insns[n++] = EXIT();

	fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "xdpgen", "GPL", insns, (size_t)n, &opts);
	if (fd < 0) {
		int err = errno;

		opts.log_level = 1;
		fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "xdpgen", "GPL", insns, (size_t)n, &opts);
		if (fd >= 0)
			return fd;
		fprintf(stderr, "xdpgen: loading the XDP program failed: %s%s\n%s", strerror(err),
			err == EPERM ? " (run as root / CAP_BPF+CAP_NET_ADMIN)" : "", log);
		errno = err;
	}
	return fd;
}


/* ------------------------------------------------------------------ */
/* Dispatcher pin                                                     */
/*
 * Every BPF_PROG_RUN call with repeat > 1 adds the program to the kernel's
 * XDP dispatcher and removes it again at the end (bpf_prog_change_xdp()),
 * and each change waits for an RCU grace period: about 20 ms per call here,
 * whatever the repeat. While the program is attached to some device, the
 * dispatcher only takes a reference and no update happens. So a helper
 * thread moves into a fresh, private network namespace (unshare) and
 * attaches the program in generic mode to that namespace's loopback, which
 * is down and never sees a packet. It detaches before exiting; if the
 * process dies first, the namespace and the attachment die with it.
 */
struct pin {
	pthread_t tid;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool ready, release;
	int err;
	const char *what;
};

static struct pin pin = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

static void *pin_main(void *arg)
{
	unsigned int lo = 0;
	int err = 0;

	(void)arg;
	if (unshare(CLONE_NEWNET)) {
		err = errno;
		pin.what = "unshare(CLONE_NEWNET)";
	} else if (!(lo = if_nametoindex("lo"))) {
		err = errno;
		pin.what = "if_nametoindex(lo)";
	} else if ((err = -bpf_xdp_attach((int)lo, prog_fd, XDP_FLAGS_SKB_MODE, NULL))) {
		pin.what = "bpf_xdp_attach(lo, generic)";
	}
	pthread_mutex_lock(&pin.lock);
	pin.err = err;
	pin.ready = true;
	pthread_cond_broadcast(&pin.cond);
	while (!err && !pin.release)
		pthread_cond_wait(&pin.cond, &pin.lock);
	pthread_mutex_unlock(&pin.lock);
	if (!err)
		bpf_xdp_detach((int)lo, XDP_FLAGS_SKB_MODE, NULL);
	return NULL;
}

/* Returns 0 when the program is pinned in the dispatcher. */
static int pin_start(void)
{
	int err = pthread_create(&pin.tid, NULL, pin_main, NULL);

	if (err) {
		pin.what = "pthread_create";
		return err;
	}
	pthread_mutex_lock(&pin.lock);
	while (!pin.ready)
		pthread_cond_wait(&pin.cond, &pin.lock);
	err = pin.err;
	pthread_mutex_unlock(&pin.lock);
	if (err)
		pthread_join(pin.tid, NULL);
	return err;
}

static void pin_stop(void)
{
	pthread_mutex_lock(&pin.lock);
	pin.release = true;
	pthread_cond_broadcast(&pin.cond);
	pthread_mutex_unlock(&pin.lock);
	pthread_join(pin.tid, NULL);
}

/* ------------------------------------------------------------------ */
/* Workers                                                            */

static inline bool past(const struct timespec *now, const struct timespec *t)
{
	return now->tv_sec > t->tv_sec || (now->tv_sec == t->tv_sec && now->tv_nsec >= t->tv_nsec);
}

static double ts_diff(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/*
 * Paced sending (--rate). By now a thread may have sent base + elapsed * rate packets; it sends
 * what it owes (at most one send's worth at a time) and otherwise sleeps until a slice of `slice`
 * packets is owed, so the frames leave evenly, a slice every pacing step. Lag beyond
 * PACE_MAX_LAG (the thread was descheduled, or the rate is above what it can send) is forgiven,
 * not made up in a burst: the achieved rate then falls short, and the summary line shows it.
 */
struct pacer {
	double rate;              /* packets/s of this thread, 0: unpaced */
	double base;              /* packets owed at t0 (lowered when lag is forgiven) */
	unsigned int slice;       /* packets per pacing step */
	struct timespec t0;
};

static void pacer_init(struct pacer *p, double rate, double step, unsigned int max)
{
	double slice = rate * step;

	memset(p, 0, sizeof(*p));
	p->rate = rate;
	p->slice = slice < 1.0 ? 1 : slice > max ? max : (unsigned int)slice;
	clock_gettime(CLOCK_MONOTONIC, &p->t0);
}

static void ts_add(struct timespec *t, double secs)
{
	long long ns = t->tv_nsec + (long long)((secs - (double)(long long)secs) * 1e9);

	t->tv_sec += (time_t)secs + (time_t)(ns / 1000000000LL);
	t->tv_nsec = (long)(ns % 1000000000LL);
	if (t->tv_nsec < 0) {
		t->tv_nsec += 1000000000L;
		t->tv_sec--;
	}
}

/*
 * How many of `want` packets may go now, `sent` having gone. 0: none yet; the thread slept (at
 * most 50 ms, and not past the deadline when `timed`) and looks at its stop conditions again.
 */
static unsigned int pace(struct pacer *p, unsigned long long sent, unsigned int want, bool timed)
{
	struct timespec now, wake, cap;
	double owed, lag_max;

	if (!p->rate)
		return want;
	clock_gettime(CLOCK_MONOTONIC, &now);
	owed = p->base + ts_diff(&p->t0, &now) * p->rate - (double)sent;
	lag_max = p->rate * PACE_MAX_LAG > p->slice ? p->rate * PACE_MAX_LAG : p->slice;
	if (owed > lag_max) {
		p->base -= owed - lag_max;
		owed = lag_max;
	}
	if (owed >= p->slice || (owed >= 1.0 && want < p->slice))
		return owed < want ? (unsigned int)owed : want;
	wake = p->t0;
	ts_add(&wake, ((double)sent + p->slice - p->base) / p->rate);
	cap = now;
	ts_add(&cap, 0.05);
	if (past(&wake, &cap))
		wake = cap;
	if (timed && past(&wake, &deadline))
		wake = deadline;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, NULL) == EINTR)
		;
	return 0;
}

static void count_packets(struct worker *w, unsigned long long n)
{
	__atomic_store_n(&w->packets, w->packets + n, __ATOMIC_RELAXED);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct xdp_md ctx = {
		.data_end = cfg->pkt_size,
		.ingress_ifindex = cfg->ifindex,
	};
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		    .data_in = frame,
		    .data_size_in = cfg->pkt_size,
		    .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx),
		    .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		    .batch_size = cfg->kernel_batch);
	struct pacer pacer;
	cpu_set_t set;
	struct timespec now;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	w->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	pthread_barrier_wait(&start_barrier);
	if (w->err) {
		clock_gettime(CLOCK_MONOTONIC, &w->start);
		w->end = w->start;
		return NULL;
	}
	w->started = true;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &w->start);
	pacer_init(&pacer, w->rate, PACE_STEP_LIVE, cfg->batch);
	while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
		unsigned int repeat = cfg->batch;

		if (w->quota) {
			unsigned long long left = w->quota - w->packets;

			if (!left)
				break;
			if (left < repeat)
				repeat = (unsigned int)left;
		}
		repeat = pace(&pacer, w->packets, repeat, !w->quota);
		if (!repeat) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (!w->quota && past(&now, &deadline))
				break;
			continue;
		}
		opts.repeat = repeat;
		if (bpf_prog_test_run_opts(prog_fd, &opts)) {
			/* Signals are blocked in workers, so EINTR is unexpected: the
			 * partial batch cannot be counted; stop rather than guess. */
			w->err = errno;
			break;
		}
		count_packets(w, repeat);
		if (!w->quota) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (past(&now, &deadline))
				break;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &w->end);
	return NULL;
}

/*
 * Whether the kernel runs XDP programs on live frames: one BPF_PROG_RUN of a
 * program that returns XDP_DROP, so nothing is sent. Returns 0, or the errno
 * that refused it.
 */
static int probe_live(const struct config *c)
{
	struct bpf_insn insns[] = { MOV64_IMM(BPF_REG_0, XDP_DROP), EXIT() };
	struct xdp_md ctx = { .data_end = c->pkt_size, .ingress_ifindex = c->ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = c->pkt_size,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1,
		    .flags = BPF_F_TEST_XDP_LIVE_FRAMES);
	int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "xdpgen_probe", "GPL", insns, 2, NULL);
	int err = 0;

	if (fd < 0)
		return errno;
	if (bpf_prog_test_run_opts(fd, &opts))
		err = errno;
	close(fd);
	return err;
}

/*
 * Packet mode: the same frame from an AF_PACKET socket bound to the interface, past the qdisc
 * (PACKET_QDISC_BYPASS), one socket per thread.
 *
 * --packet-tx ring (the default): a PACKET_TX_RING (TPACKET_V2) of RING_FRAMES slots, each
 * holding the frame, written once before the start. Sending a frame is flipping its slot to
 * TP_STATUS_SEND_REQUEST; one sendto() per batch hands every requested slot to the kernel, which
 * builds each skb from the ring's page with no per-packet copy from user space and no per-packet
 * system call. A frame counts as sent when the kernel gives its slot back (TP_STATUS_AVAILABLE,
 * when the skb is freed); a frame the device refused (ENOBUFS) stays requested and goes with the
 * next sendto(), so the count is exact. --flows rewrites the source port in the slot before it is
 * requested.
 *
 * --packet-tx mmsg: sendmmsg() of the batch; a frame the device could not take (ENOBUFS), or that
 * the full send buffer could not hold (EAGAIN: non-blocking, so the deadline is kept), is not
 * counted and is sent again.
 */
struct packet_sock {
	int fd;
	uint8_t *ring;           /* TX ring mapping, NULL for mmsg */
	size_t ring_len;
	unsigned int frame_size; /* bytes per ring slot */
};

static int packet_open(struct packet_sock *ps)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_ifindex = (int)cfg->ifindex };
	int one = 1;

	memset(ps, 0, sizeof(*ps));
	ps->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (ps->fd < 0)
		return errno;
	if (setsockopt(ps->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)))
		return errno;
	if (cfg->packet_tx == TX_RING) {
		int ver = TPACKET_V2;
		struct tpacket_req req;
		unsigned int fs = 64, block = 1U << 16;

		while (fs < TPACKET2_HDRLEN + cfg->pkt_size)
			fs <<= 1;
		ps->frame_size = fs;
		if (block < fs)
			block = fs;
		req.tp_block_size = block;
		req.tp_frame_size = fs;
		req.tp_frame_nr = RING_FRAMES;
		req.tp_block_nr = RING_FRAMES / (block / fs);
		if (setsockopt(ps->fd, SOL_PACKET, PACKET_VERSION, &ver, sizeof(ver)) ||
		    setsockopt(ps->fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)))
			return errno;
		ps->ring_len = (size_t)req.tp_block_size * req.tp_block_nr;
		ps->ring = mmap(NULL, ps->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, ps->fd, 0);
		if (ps->ring == MAP_FAILED) {
			ps->ring = NULL;
			return errno;
		}
		for (unsigned int i = 0; i < RING_FRAMES; i++) {
			struct tpacket2_hdr *h = (void *)(ps->ring + (size_t)i * fs);

			memcpy((uint8_t *)h + TPACKET2_HDRLEN - sizeof(struct sockaddr_ll), frame,
			       cfg->pkt_size);
			h->tp_len = cfg->pkt_size;
		}
	}
	if (bind(ps->fd, (struct sockaddr *)&sll, sizeof(sll)))
		return errno;
	return 0;
}

static void packet_close(struct packet_sock *ps)
{
	if (ps->ring)
		munmap(ps->ring, ps->ring_len);
	if (ps->fd >= 0)
		close(ps->fd);
}

static inline uint16_t next_sport(uint32_t *rnd)
{
	*rnd ^= *rnd << 13;
	*rnd ^= *rnd >> 17;
	*rnd ^= *rnd << 5;
	return htons((uint16_t)(cfg->sport + *rnd % cfg->flows));
}

static unsigned int packet_batch(void)
{
	return cfg->batch < PACKET_BATCH_MAX ? cfg->batch : PACKET_BATCH_MAX;
}

static void packet_ring_loop(struct worker *w, struct packet_sock *ps, uint32_t rnd)
{
	unsigned int batch = packet_batch();
	unsigned long long queued = 0, done = 0; /* slots requested, slots given back */
	struct pacer pacer;
	struct timespec now;

	pacer_init(&pacer, w->rate, PACE_STEP_PACKET, batch);
	for (;;) {
		bool stopping = atomic_load_explicit(&stop_flag, memory_order_relaxed);
		unsigned int n = 0, want = batch;

		while (done < queued) {
			struct tpacket2_hdr *h = (void *)(ps->ring + (done % RING_FRAMES) * ps->frame_size);
			unsigned int st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);

			if (st == TP_STATUS_AVAILABLE) {
				done++;
			} else if (st & TP_STATUS_WRONG_FORMAT) {
				w->err = EINVAL;
				goto out;
			} else {
				break;
			}
		}
		count_packets(w, done - w->packets);
		if (!w->quota) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (past(&now, &deadline))
				stopping = true;
		}
		if (w->quota && queued >= w->quota)
			stopping = true;
		if (stopping) {
			/* what is requested still goes (at most a few batches), then stop */
			if (done == queued)
				break;
		} else {
			unsigned long long room = RING_FRAMES - (queued - done);

			if (w->quota && w->quota - queued < want)
				want = (unsigned int)(w->quota - queued);
			if (room < want)
				want = (unsigned int)room;
			n = want ? pace(&pacer, queued, want, !w->quota) : 0;
		}
		for (unsigned int i = 0; i < n; i++) {
			struct tpacket2_hdr *h = (void *)(ps->ring + (queued % RING_FRAMES) * ps->frame_size);

			if (cfg->flows > 1) {
				uint16_t v = next_sport(&rnd);

				memcpy((uint8_t *)h + TPACKET2_HDRLEN - sizeof(struct sockaddr_ll) + SPORT_OFF,
				       &v, 2);
			}
			__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
			queued++;
		}
		if (queued == done)
			continue;
		if (sendto(ps->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0) {
			if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
				w->err = errno;
				break;
			}
			sched_yield();
		} else if (!n) {
			sched_yield(); /* waiting for slots to come back */
		}
	}
out:
	count_packets(w, done - w->packets);
}

static void packet_mmsg_loop(struct worker *w, struct packet_sock *ps, uint32_t rnd)
{
	static __thread uint8_t frames[PACKET_BATCH_MAX][MAX_LIVE_FRAME];
	static __thread struct iovec iov[PACKET_BATCH_MAX];
	static __thread struct mmsghdr msgs[PACKET_BATCH_MAX];
	unsigned int batch = packet_batch();
	struct pacer pacer;
	struct timespec now;

	memset(msgs, 0, sizeof(msgs));
	for (unsigned int i = 0; i < batch; i++) {
		memcpy(frames[i], frame, cfg->pkt_size);
		iov[i].iov_base = frames[i];
		iov[i].iov_len = cfg->pkt_size;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	pacer_init(&pacer, w->rate, PACE_STEP_PACKET, batch);
	while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
		unsigned int n = batch;
		int sent;

		if (w->quota) {
			unsigned long long left = w->quota - w->packets;

			if (!left)
				break;
			if (left < n)
				n = (unsigned int)left;
		}
		n = pace(&pacer, w->packets, n, !w->quota);
		if (n && cfg->flows > 1) {
			for (unsigned int i = 0; i < n; i++) {
				uint16_t v = next_sport(&rnd);

				memcpy(frames[i] + SPORT_OFF, &v, 2);
			}
		}
		/* MSG_DONTWAIT: a socket whose send buffer is full (the receiver has not
		 * consumed the frames yet) must not block past the deadline. */
		sent = n ? sendmmsg(ps->fd, msgs, n, MSG_DONTWAIT) : 0;
		if (sent < 0) {
			if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
				w->err = errno;
				break;
			}
			sched_yield();
			sent = 0;
		}
		count_packets(w, (unsigned int)sent);
		if (!w->quota) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (past(&now, &deadline))
				break;
		}
	}
}

static void *packet_worker_main(void *arg)
{
	struct worker *w = arg;
	uint32_t rnd = 0x9e3779b9u ^ (w->idx + 1) * 0x85ebca6bu;
	struct packet_sock ps = { .fd = -1 };
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	w->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (!w->err)
		w->err = packet_open(&ps);
	pthread_barrier_wait(&start_barrier);
	clock_gettime(CLOCK_MONOTONIC, &w->start);
	if (w->err) {
		w->end = w->start;
		packet_close(&ps);
		return NULL;
	}
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	w->started = true;
	if (cfg->packet_tx == TX_RING)
		packet_ring_loop(w, &ps, rnd);
	else
		packet_mmsg_loop(w, &ps, rnd);
	clock_gettime(CLOCK_MONOTONIC, &w->end);
	packet_close(&ps);
	return NULL;
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	static struct config conf;
	struct worker *workers;
	sigset_t sigs;
	struct timespec first = { 0 }, last = { 0 }, next_tick, tick_start, tick_prev;
	unsigned long long tick_packets = 0;
	unsigned long long total = 0;
	double secs, pps;
	char rate_text[32] = "max";
	int rc = 0, err;

	/* Blocked from the start and inherited by every thread: SIGINT/SIGTERM are
	 * taken by the main thread with sigtimedwait(), so no BPF_PROG_RUN call is
	 * interrupted half-way (its packets could not be counted). */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_args(argc, argv, &conf);
	cfg = &conf;
	if (iface_info(&conf))
		return 1;
	build_frame(&conf);

	if (conf.mode != MODE_PACKET) {
		int refused = probe_live(&conf);

		if (refused && conf.mode == MODE_LIVE) {
			fprintf(stderr, "xdpgen: the kernel refuses BPF_PROG_RUN live frames: %s "
				"(--mode auto would send from an AF_PACKET socket)\n", strerror(refused));
			return 1;
		}
		if (refused && refused != EPERM && refused != EINVAL && refused != EOPNOTSUPP &&
		    refused != ENOTSUPP) {
			fprintf(stderr, "xdpgen: probing BPF_PROG_RUN live frames failed: %s\n",
				strerror(refused));
			return 1;
		}
		if (refused && !conf.quiet)
			fprintf(stderr, "xdpgen: the kernel refuses BPF_PROG_RUN live frames (%s): "
				"sending from an AF_PACKET socket instead (mode packet)\n", strerror(refused));
		conf.mode = refused ? MODE_PACKET : MODE_LIVE;
	}
	if (conf.mode == MODE_PACKET) {
		conf.no_pin = true;
		if (!conf.have_batch)
			conf.batch = PACKET_BATCH;
		else if (conf.batch > PACKET_BATCH_MAX) {
			if (!conf.quiet)
				fprintf(stderr, "xdpgen: -b/--batch %u: at most %d frames per send in packet "
					"mode, using %d\n", conf.batch, PACKET_BATCH_MAX, PACKET_BATCH_MAX);
			conf.batch = PACKET_BATCH_MAX;
		}
	}

	if (conf.mode == MODE_LIVE && (prog_fd = load_prog(&conf)) < 0)
		return 1;

	if (!conf.no_pin && (err = pin_start())) {
		if (!conf.quiet)
			fprintf(stderr, "xdpgen: warning: %s: %s; running without the dispatcher "
				"pin (slower per BPF_PROG_RUN call)\n", pin.what, strerror(err));
		conf.no_pin = true;
	}


	workers = calloc(conf.threads, sizeof(*workers));
	if (!workers) {
		perror("xdpgen: calloc");
		return 1;
	}
	if (!conf.quiet)
		fprintf(stderr, "xdpgen: %s (ifindex %u): %u-byte frames, %u thread(s) from CPU %u, "
			"%s%llu%s, batch %u, mode %s%s%s, rate %s%.0f\n", conf.dev, conf.ifindex, conf.pkt_size,
			conf.threads, conf.cpu, conf.count ? "count " : "duration ",
			conf.count ? conf.count : (unsigned long long)(conf.duration * 1000),
			conf.count ? "" : " ms", conf.batch, mode_names[conf.mode],
			conf.mode == MODE_PACKET ? " " : "",
			conf.mode == MODE_PACKET ? packet_tx_names[conf.packet_tx] : "",
			conf.rate ? "" : "max ", conf.rate);

	pthread_barrier_init(&start_barrier, NULL, conf.threads + 1);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	{
		double d = conf.duration;
		long long ns = deadline.tv_nsec + (long long)((d - (long long)d) * 1e9);

		deadline.tv_sec += (time_t)d + (time_t)(ns / 1000000000LL);
		deadline.tv_nsec = (long)(ns % 1000000000LL);
	}
	for (unsigned int i = 0; i < conf.threads; i++) {
		struct worker *w = &workers[i];

		w->idx = i;
		w->cpu = conf.cpu + i;
		if (conf.count)
			w->quota = conf.count / conf.threads + (i < conf.count % conf.threads);
		w->rate = conf.rate / conf.threads;
		err = pthread_create(&w->tid, NULL, conf.mode == MODE_PACKET ? packet_worker_main : worker_main, w);
		if (err) {
			fprintf(stderr, "xdpgen: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	pthread_barrier_wait(&start_barrier);
	clock_gettime(CLOCK_MONOTONIC, &tick_prev);

	/* Wait for the workers to finish, or for a signal to stop them; print the intervals. */
	clock_gettime(CLOCK_MONOTONIC, &next_tick);
	tick_start = next_tick;
	ts_add(&next_tick, conf.interval ? conf.interval : 0.05);
	for (;;) {
		struct timespec tick = { 0, 50 * 1000 * 1000 }, now;
		bool running = false;
		int sig;

		for (unsigned int i = 0; i < conf.threads; i++) {
			if (workers[i].joined)
				continue;
			if (pthread_tryjoin_np(workers[i].tid, NULL) == EBUSY)
				running = true;
			else
				workers[i].joined = true;
		}
		if (!running)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (conf.interval && past(&now, &next_tick)) {
			unsigned long long sum = 0;

			for (unsigned int i = 0; i < conf.threads; i++)
				sum += __atomic_load_n(&workers[i].packets, __ATOMIC_RELAXED);
			printf("xdpgen: interval %.6f packets %llu pps %.2f\n", ts_diff(&tick_start, &now),
			       sum - tick_packets, (double)(sum - tick_packets) / ts_diff(&tick_prev, &now));
			tick_packets = sum;
			tick_prev = now;
			do
				ts_add(&next_tick, conf.interval);
			while (past(&now, &next_tick));
		}
		if (conf.interval && ts_diff(&now, &next_tick) < 0.05) {
			double left = ts_diff(&now, &next_tick);

			tick.tv_sec = (time_t)left;
			tick.tv_nsec = (long)((left - (double)tick.tv_sec) * 1e9);
		}
		sig = sigtimedwait(&sigs, NULL, &tick);
		if (sig == SIGINT || sig == SIGTERM) {
			atomic_store(&stop_flag, true);
			if (!conf.quiet)
				fprintf(stderr, "xdpgen: %s, stopping\n", strsignal(sig));
		}
	}

	for (unsigned int i = 0; i < conf.threads; i++) {
		struct worker *w = &workers[i];
		double s = ts_diff(&w->start, &w->end);

		if (w->err) {
			fprintf(stderr, "xdpgen: thread %u cpu %u: %s: %s\n", i, w->cpu,
				w->started ? (conf.mode == MODE_PACKET ? "sendmmsg failed" : "BPF_PROG_RUN failed")
					   : (conf.mode == MODE_PACKET ? "pinning or AF_PACKET socket failed" : "pinning failed"),
				strerror(w->err));
			if (w->started && w->err == EINVAL && conf.mode == MODE_LIVE)
				fprintf(stderr, "xdpgen: (kernel without BPF_F_TEST_XDP_LIVE_FRAMES, "
					"or a frame size it refuses)\n");
			rc = 1;
		}
		printf("xdpgen: thread %u cpu %u packets %llu seconds %.6f pps %.2f\n", i, w->cpu,
		       w->packets, s, s > 0 ? (double)w->packets / s : 0.0);
		total += w->packets;
		if (!i || !past(&w->start, &first))
			first = w->start;
		if (!i || past(&w->end, &last))
			last = w->end;
	}
	secs = ts_diff(&first, &last);
	pps = secs > 0 ? (double)total / secs : 0.0;
	if (conf.rate)
		snprintf(rate_text, sizeof(rate_text), "%.0f", conf.rate);
	printf("xdpgen: packets=%llu bytes=%llu seconds=%.6f pps=%.2f gbps=%.4f threads=%u "
	       "pkt_size=%u mode=%s rate=%s\n", total, total * conf.pkt_size, secs, pps,
	       pps * conf.pkt_size * 8 / 1e9, conf.threads, conf.pkt_size, mode_names[conf.mode],
	       rate_text);
	if (conf.rate && pps < conf.rate * 0.99 && !conf.quiet)
		fprintf(stderr, "xdpgen: warning: sent %.0f packets/s, below the asked --rate %.0f\n",
			pps, conf.rate);
	if (!conf.no_pin)
		pin_stop();
	if (prog_fd >= 0)
		close(prog_fd);
	free(workers);
	return rc;
}
