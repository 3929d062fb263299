/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * xsk_common.h: shared code of the xdplab.testbed AF_XDP and socket tools
 * (xskgen, xsksink, udpgen, udpsink).
 *
 * AF_XDP is driven through the raw uapi (socket, setsockopt, mmap, bind), not
 * through libxdp's xsk helpers: Debian 12's libxdp 1.3 cannot register a UMEM
 * with a TX metadata area, and the raw calls let the tools report exactly
 * which step the kernel refused. libbpf is used only to load the tiny XDP
 * program of xsksink.
 *
 * Output contract (stdout), read by plugins/module_utils/traffic/_output_parsers.py
 * (parse_xskgen) and _servers.py (parse_sink):
 *   sent <N> packets <B> bits, took <S> sec, <G> gbps <M> mpps
 *   recv <N> packets <B> bits, took <S> sec, <G> gbps <M> mpps     (sinks, one per burst)
 *   <tool>: <key>=<value> ...                                        (information lines)
 * Bits count the frame without FCS (packets * frame bytes * 8), as xdpgen.
 */
#ifndef XSK_COMMON_H
#define XSK_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif
/* Busy-poll socket options (asm-generic/socket.h, 5.11+). */
#ifndef SO_BUSY_POLL
#define SO_BUSY_POLL 46
#endif
#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif
#ifndef XDP_USE_NEED_WAKEUP
#define XDP_USE_NEED_WAKEUP (1 << 3)
#endif
/*
 * TX metadata uapi (Linux 6.8+, include/uapi/linux/if_xdp.h). Debian 12's
 * linux-libc-dev (6.1) lacks all of it, so it is defined here with the
 * kernel's values.
 */
#ifndef XDP_UMEM_TX_METADATA_LEN
#define XDP_UMEM_TX_METADATA_LEN (1 << 2)
#endif
#ifndef XDP_TX_METADATA
#define XDP_TX_METADATA (1 << 1)
#endif
#define XL_TXMD_FLAGS_TIMESTAMP (1 << 0)
#define XL_TXMD_FLAGS_CHECKSUM (1 << 1)

/* struct xdp_umem_reg as of 6.8 (tx_metadata_len added after flags). */
struct xl_umem_reg {
	uint64_t addr;
	uint64_t len;
	uint32_t chunk_size;
	uint32_t headroom;
	uint32_t flags;
	uint32_t tx_metadata_len;
};

/* struct xsk_tx_metadata (6.8+): 24 bytes in front of the packet data. */
struct xl_tx_metadata {
	uint64_t flags;
	union {
		struct {
			uint16_t csum_start;
			uint16_t csum_offset;
			uint32_t pad;
			uint64_t launch_time;
		} request;
		struct {
			uint64_t tx_timestamp;
		} completion;
	};
};

#define ETH_HDR_LEN 14
#define IP_HDR_LEN 20
#define UDP_HDR_LEN 8
#define HDRS_LEN (ETH_HDR_LEN + IP_HDR_LEN + UDP_HDR_LEN)
#define MIN_FRAME 60

static volatile sig_atomic_t xl_stop;

static inline void xl_on_signal(int sig)
{
	(void)sig;
	xl_stop = 1;
}

static inline void xl_signals(void)
{
	struct sigaction sa = { .sa_handler = xl_on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static inline double xl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *xl_prog = "xsk";

static inline void xl_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", xl_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see --help)\n");
	exit(EXIT_USAGE);
}

/* Parse an unsigned integer option, naming option and value on error. */
static inline unsigned long long xl_uint(const char *name, const char *s, unsigned long long lo,
				  unsigned long long hi)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!s || !*s || *s == '-')
		xl_usage_error("%s must be an integer in %llu..%llu, got '%s'", name, lo, hi, s ? s : "");
	v = strtoull(s, &end, 0);
	if (errno || *end || v < lo || v > hi)
		xl_usage_error("%s must be an integer in %llu..%llu, got '%s'", name, lo, hi, s);
	return v;
}

static inline double xl_seconds(const char *name, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v > 0) || v > 31536000.0)
		xl_usage_error("%s must be a number of seconds > 0, got '%s'", name, s);
	return v;
}

static inline int xl_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

static inline unsigned int xl_ifindex(const char *ifname)
{
	unsigned int idx = if_nametoindex(ifname);

	if (!idx) {
		fprintf(stderr, "%s: interface '%s' not found: %s\n", xl_prog, ifname, strerror(errno));
		exit(1);
	}
	return idx;
}

/* Print the contract line: "<verb> N packets B bits, took S sec, G gbps M mpps". */
static inline void xl_report(const char *verb, uint64_t packets, uint64_t bytes, double seconds)
{
	double gbps = seconds > 0 ? (double)bytes * 8.0 / seconds / 1e9 : 0.0;
	double mpps = seconds > 0 ? (double)packets / seconds / 1e6 : 0.0;

	printf("%s %llu packets %llu bits, took %f sec, %f gbps %f mpps\n", verb,
	       (unsigned long long)packets, (unsigned long long)bytes * 8ULL, seconds, gbps, mpps);
	fflush(stdout);
}

/* ---------------------------------------------------------------- frames */
static inline uint16_t xl_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static inline uint32_t xl_csum_add(uint32_t sum, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)(p[len - 1] << 8);
	return sum;
}

struct xl_flow {
	uint8_t dst_mac[6], src_mac[6];
	struct in_addr src_ip, dst_ip;
	uint16_t sport, dport, flows;
};

/*
 * Write an Ethernet/IPv4/UDP frame of `size` bytes (no FCS) for flow number
 * `flow` (source port sport + flow). udp_csum: 0 leaves the UDP checksum 0
 * ("none", valid for IPv4), 1 computes it, 2 writes only the pseudo-header sum
 * (what a checksum offload request expects, CHECKSUM_PARTIAL).
 */
static inline void xl_build_frame(uint8_t *f, size_t size, const struct xl_flow *fl, unsigned int flow,
			   int udp_csum)
{
	size_t ip_len = size - ETH_HDR_LEN, udp_len = ip_len - IP_HDR_LEN;
	uint8_t *ip = f + ETH_HDR_LEN, *udp = ip + IP_HDR_LEN;
	uint16_t sport = (uint16_t)(fl->sport + flow), c;
	uint32_t sum;

	memset(f, 0, size);
	memcpy(f, fl->dst_mac, 6);
	memcpy(f + 6, fl->src_mac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	ip[0] = 0x45;
	ip[2] = (uint8_t)(ip_len >> 8);
	ip[3] = (uint8_t)ip_len;
	ip[6] = 0x40; /* DF */
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, &fl->src_ip, 4);
	memcpy(ip + 16, &fl->dst_ip, 4);
	c = (uint16_t)~xl_csum_fold(xl_csum_add(0, ip, IP_HDR_LEN));
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	udp[0] = (uint8_t)(sport >> 8);
	udp[1] = (uint8_t)sport;
	udp[2] = (uint8_t)(fl->dport >> 8);
	udp[3] = (uint8_t)fl->dport;
	udp[4] = (uint8_t)(udp_len >> 8);
	udp[5] = (uint8_t)udp_len;
	for (size_t i = UDP_HDR_LEN; i < udp_len; i++)
		udp[i] = (uint8_t)i;
	if (!udp_csum)
		return;
	sum = xl_csum_add(0, ip + 12, 8) + 17 + (uint32_t)udp_len;
	if (udp_csum == 2) {
		c = xl_csum_fold(sum);
	} else {
		c = (uint16_t)~xl_csum_fold(xl_csum_add(sum, udp, udp_len));
		if (!c)
			c = 0xffff;
	}
	udp[6] = (uint8_t)(c >> 8);
	udp[7] = (uint8_t)c;
}

/* ------------------------------------------------------------ AF_XDP rings */
struct xl_ring {
	uint32_t *producer, *consumer, *flags;
	void *desc;
	uint32_t mask, size;
	void *map;
	size_t map_len;
};

struct xl_xsk {
	int fd;
	uint8_t *umem;
	size_t umem_len;
	uint32_t frames, frame_size, md_len;
	struct xl_ring fq, cq, rx, tx;
	bool zerocopy;
	char mode_note[160];
};

static inline int xl_map_ring(int fd, struct xl_ring *r, const struct xdp_ring_offset *off, uint32_t size,
		       size_t desc_size, off_t pgoff)
{
	r->map_len = off->desc + size * desc_size;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, pgoff);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -1;
	}
	r->producer = (uint32_t *)((uint8_t *)r->map + off->producer);
	r->consumer = (uint32_t *)((uint8_t *)r->map + off->consumer);
	r->flags = (uint32_t *)((uint8_t *)r->map + off->flags);
	r->desc = (uint8_t *)r->map + off->desc;
	r->size = size;
	r->mask = size - 1;
	return 0;
}

static inline uint32_t xl_load(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void xl_store(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline void xl_fail(const char *step, int err, const char *hint)
{
	fprintf(stderr, "%s: %s failed: %s%s%s\n", xl_prog, step, strerror(err), hint ? ": " : "",
		hint ? hint : "");
}

/*
 * Create an AF_XDP socket bound to ifname/queue with a UMEM of `frames`
 * frames of `frame_size` bytes. md_len > 0 registers a TX metadata area of
 * that size (XDP_UMEM_TX_METADATA_LEN). mode: 0 copy, 1 zero-copy, 2 auto
 * (zero-copy, else copy, saying why in x->mode_note). Returns 0 or -1 with a
 * message on stderr naming the refused step.
 */
static inline int xl_xsk_open(struct xl_xsk *x, const char *ifname, uint32_t queue, uint32_t frames,
		       uint32_t frame_size, uint32_t md_len, int mode, bool want_rx, bool want_tx)
{
	struct xl_umem_reg reg = { 0 };
	struct xdp_mmap_offsets off;
	socklen_t optlen = sizeof(off);
	struct sockaddr_xdp sxdp = { 0 };
	uint32_t ring = frames / 2;
	int err;

	memset(x, 0, sizeof(*x));
	x->frames = frames;
	x->frame_size = frame_size;
	x->md_len = md_len;
	x->fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (x->fd < 0) {
		xl_fail("socket(AF_XDP)", errno, errno == EAFNOSUPPORT ? "kernel without CONFIG_XDP_SOCKETS" : NULL);
		return -1;
	}
	x->umem_len = (size_t)frames * frame_size;
	x->umem = mmap(NULL, x->umem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);
	if (x->umem == MAP_FAILED) {
		xl_fail("mmap(UMEM)", errno, NULL);
		return -1;
	}
	reg.addr = (uint64_t)(uintptr_t)x->umem;
	reg.len = x->umem_len;
	reg.chunk_size = frame_size;
	if (md_len) {
		reg.flags = XDP_UMEM_TX_METADATA_LEN;
		reg.tx_metadata_len = md_len;
	}
	if (setsockopt(x->fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg))) {
		err = errno;
		xl_fail(md_len ? "XDP_UMEM_REG with XDP_UMEM_TX_METADATA_LEN" : "XDP_UMEM_REG", err,
			md_len && err == EINVAL ? "this kernel has no AF_XDP TX metadata (Linux 6.8+)" : NULL);
		errno = err;
		return -1;
	}
	if (setsockopt(x->fd, SOL_XDP, XDP_UMEM_FILL_RING, &ring, sizeof(ring)) ||
	    setsockopt(x->fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &ring, sizeof(ring)) ||
	    (want_rx && setsockopt(x->fd, SOL_XDP, XDP_RX_RING, &ring, sizeof(ring))) ||
	    (want_tx && setsockopt(x->fd, SOL_XDP, XDP_TX_RING, &ring, sizeof(ring)))) {
		xl_fail("setting the AF_XDP ring sizes", errno, NULL);
		return -1;
	}
	if (getsockopt(x->fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &optlen)) {
		xl_fail("XDP_MMAP_OFFSETS", errno, NULL);
		return -1;
	}
	if (xl_map_ring(x->fd, &x->fq, &off.fr, ring, sizeof(uint64_t), XDP_UMEM_PGOFF_FILL_RING) ||
	    xl_map_ring(x->fd, &x->cq, &off.cr, ring, sizeof(uint64_t), XDP_UMEM_PGOFF_COMPLETION_RING) ||
	    (want_rx && xl_map_ring(x->fd, &x->rx, &off.rx, ring, sizeof(struct xdp_desc), XDP_PGOFF_RX_RING)) ||
	    (want_tx && xl_map_ring(x->fd, &x->tx, &off.tx, ring, sizeof(struct xdp_desc), XDP_PGOFF_TX_RING))) {
		xl_fail("mmap of the AF_XDP rings", errno, NULL);
		return -1;
	}
	sxdp.sxdp_family = AF_XDP;
	sxdp.sxdp_ifindex = xl_ifindex(ifname);
	sxdp.sxdp_queue_id = queue;
	if (mode != 0) {
		sxdp.sxdp_flags = XDP_ZEROCOPY | XDP_USE_NEED_WAKEUP;
		if (!bind(x->fd, (struct sockaddr *)&sxdp, sizeof(sxdp))) {
			x->zerocopy = true;
			snprintf(x->mode_note, sizeof(x->mode_note), "zero-copy");
			return 0;
		}
		err = errno;
		if (mode == 1) {
			char hint[128];

			snprintf(hint, sizeof(hint), "zero-copy is not supported by the driver of %s queue %u",
				 ifname, queue);
			xl_fail("bind(XDP_ZEROCOPY)", err, hint);
			return -1;
		}
		snprintf(x->mode_note, sizeof(x->mode_note), "copy (zero-copy refused by %s: %s)", ifname,
			 strerror(err));
	} else {
		snprintf(x->mode_note, sizeof(x->mode_note), "copy (asked)");
	}
	sxdp.sxdp_flags = XDP_COPY | XDP_USE_NEED_WAKEUP;
	/* EBUSY: the queue is still held by an AF_XDP socket of a process that just exited (the
	 * kernel releases it asynchronously); give it up to a second before failing. */
	for (int tries = 0; bind(x->fd, (struct sockaddr *)&sxdp, sizeof(sxdp)); tries++) {
		err = errno;
		if (err == EBUSY && tries < 20) {
			usleep(50000);
			continue;
		}
		xl_fail("bind(XDP_COPY)", err, err == EINVAL ? "no such queue on the interface?" : NULL);
		return -1;
	}
	return 0;
}

static inline int xl_busy_poll(int fd, unsigned int usec, unsigned int budget)
{
	int one = 1, us = (int)usec, b = (int)budget;

	if (setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us)) ||
	    setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &b, sizeof(b))) {
		xl_fail("enabling busy poll (SO_PREFER_BUSY_POLL/SO_BUSY_POLL/SO_BUSY_POLL_BUDGET)", errno, NULL);
		return -1;
	}
	return 0;
}

/* Print the kernel's XDP_STATISTICS of the socket as an information line. */
static inline void xl_print_stats(struct xl_xsk *x)
{
	struct xdp_statistics st = { 0 };
	socklen_t len = sizeof(st);

	if (getsockopt(x->fd, SOL_XDP, XDP_STATISTICS, &st, &len))
		return;
	printf("%s: xsk_stats rx_dropped=%llu rx_invalid_descs=%llu tx_invalid_descs=%llu "
	       "rx_ring_full=%llu rx_fill_ring_empty_descs=%llu tx_ring_empty_descs=%llu\n", xl_prog,
	       (unsigned long long)st.rx_dropped, (unsigned long long)st.rx_invalid_descs,
	       (unsigned long long)st.tx_invalid_descs, (unsigned long long)st.rx_ring_full,
	       (unsigned long long)st.rx_fill_ring_empty_descs, (unsigned long long)st.tx_ring_empty_descs);
}

static inline void xl_xsk_close(struct xl_xsk *x)
{
	struct xl_ring *rings[] = { &x->fq, &x->cq, &x->rx, &x->tx };

	for (size_t i = 0; i < sizeof(rings) / sizeof(rings[0]); i++)
		if (rings[i]->map)
			munmap(rings[i]->map, rings[i]->map_len);
	if (x->fd >= 0)
		close(x->fd);
	if (x->umem && x->umem != MAP_FAILED)
		munmap(x->umem, x->umem_len);
}

/* ------------------------------------------------------------ burst meter */
/*
 * A receiver's count cut into bursts: a burst ends when nothing arrived for
 * `gap` seconds; its rate is packets over first-to-last arrival time.
 */
struct xl_burst {
	double gap, first, last;
	uint64_t packets, bytes, total_packets, total_bytes;
	unsigned int bursts;
};

static inline void xl_burst_add(struct xl_burst *b, uint64_t packets, uint64_t bytes, double now)
{
	if (!packets)
		return;
	if (!b->packets)
		b->first = now;
	b->last = now;
	b->packets += packets;
	b->bytes += bytes;
}

static inline void xl_burst_flush(struct xl_burst *b, const char *verb)
{
	if (!b->packets)
		return;
	xl_report(verb, b->packets, b->bytes, b->last > b->first ? b->last - b->first : 1e-6);
	b->total_packets += b->packets;
	b->total_bytes += b->bytes;
	b->bursts++;
	b->packets = b->bytes = 0;
}

/* End the current burst when it has been idle for `gap` seconds. */
static inline void xl_burst_tick(struct xl_burst *b, double now, const char *verb)
{
	if (b->packets && now - b->last >= b->gap)
		xl_burst_flush(b, verb);
}

#endif /* XSK_COMMON_H */
