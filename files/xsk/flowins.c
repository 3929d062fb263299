// SPDX-License-Identifier: GPL-2.0-only
/*
 * flowins: the slow path of the xdp_flow scenario (part of the xdplab.testbed
 * collection): a new flow misses the XDP flow table, is passed to the stack,
 * and this program inserts its entry, as a flow offload's miss handler does.
 *
 *   flowins --prog-id ID --port P --flows N [--timeout S] [--action drop|pass]
 *     On the DUT. Finds the map xdplab_flows of the XDP program ID, binds a UDP
 *     socket to port P with SO_TIMESTAMPNS and, for every datagram of a flow
 *     (src, dst, sport, dport) without an entry, inserts the entry. Per flow:
 *       flow <src>:<sport> -> <dst>:<dport> insert_ns=<ns> slow_packets=<k>
 *     insert_ns: from the kernel's receive timestamp of the flow's first packet
 *     to the return of the map update (the first packet's extra latency before
 *     the table covers the flow); slow_packets: packets of the flow that took
 *     the slow path (counted until exit). Ends after N flows + 0.2 s or --timeout:
 *       flowins: flows=<n> insert_ns min=<> median=<> max=<> slow_packets=<>
 *     Prints "flowins: ready" once bound (stdout, flushed).
 *
 *   flowins --send --dst A --port P --flows N [--sport S] [--interval-ms M] [--packets K]
 *     On the generator: K datagrams (default 3) for each of N new flows (source
 *     ports S, S+1, ...), M ms apart (default 20).
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/syscall.h>
#include <time.h>

#include "xsk_common.h"

#define MAX_FLOWS 4096

struct flow_key {		/* struct xdplab_flow_key (files/xdp/xdplab.h) */
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u8 proto;
	__u8 family;
	__u16 pad;
};

struct flow_val {		/* struct xdplab_flow_val */
	__u32 action;
	__u32 ifindex;
	__u64 packets;
	__u64 bytes;
};

struct flow {
	struct flow_key key;
	long long insert_ns;
	long slow;
};

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

#define parse_long(name, s, lo, hi) ((long)xl_uint(name, s, lo, hi))

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static int find_map(__u32 prog_id, const char *name)
{
	union bpf_attr a;
	struct bpf_prog_info pinfo;
	__u32 ids[64];
	int pfd;

	memset(&a, 0, sizeof(a));
	a.prog_id = prog_id;
	pfd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &a);
	if (pfd < 0)
		die("flowins: XDP program id %u: %s", prog_id, strerror(errno));
	memset(&pinfo, 0, sizeof(pinfo));
	pinfo.nr_map_ids = 64;
	pinfo.map_ids = (__u64)(unsigned long)ids;
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = pfd;
	a.info.info_len = sizeof(pinfo);
	a.info.info = (__u64)(unsigned long)&pinfo;
	if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a))
		die("flowins: program info: %s", strerror(errno));
	close(pfd);
	for (__u32 i = 0; i < pinfo.nr_map_ids && i < 64; i++) {
		struct bpf_map_info minfo;
		int mfd;

		memset(&a, 0, sizeof(a));
		a.map_id = ids[i];
		mfd = sys_bpf(BPF_MAP_GET_FD_BY_ID, &a);
		if (mfd < 0)
			continue;
		memset(&minfo, 0, sizeof(minfo));
		memset(&a, 0, sizeof(a));
		a.info.bpf_fd = mfd;
		a.info.info_len = sizeof(minfo);
		a.info.info = (__u64)(unsigned long)&minfo;
		if (!sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) && !strcmp(minfo.name, name)) {
			if (minfo.key_size != sizeof(struct flow_key) || minfo.value_size != sizeof(struct flow_val))
				die("flowins: map %s has key/value size %u/%u, expected %zu/%zu", name,
				    minfo.key_size, minfo.value_size, sizeof(struct flow_key), sizeof(struct flow_val));
			return mfd;
		}
		close(mfd);
	}
	die("flowins: XDP program id %u has no map %s (not xdp_flow?)", prog_id, name);
}

static long long ts_ns(const struct timespec *t)
{
	return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

static int insert_mode(__u32 prog_id, int port, int nflows, double timeout, __u32 action)
{
	static struct flow flows[MAX_FLOWS];
	int n = 0, one = 1, mfd = find_map(prog_id, "xdplab_flows");
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timespec start, now, done_at = { 0 };

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("flowins: UDP port %d: %s", port, strerror(errno));
	printf("flowins: ready map=xdplab_flows port=%d\n", port);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		char buf[2048], cbuf[512];
		struct sockaddr_in src;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = { .msg_name = &src, .msg_namelen = sizeof(src), .msg_iov = &iov,
				     .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		struct pollfd pfd = { fd, POLLIN, 0 };
		struct timespec rx = { 0 }, ins;
		struct in_addr dst = { 0 };
		struct flow_key key;
		int i;

		clock_gettime(CLOCK_MONOTONIC, &now);
		double el = (now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
		if (el > timeout)
			break;
		if (done_at.tv_sec && (now.tv_sec - done_at.tv_sec) + (now.tv_nsec - done_at.tv_nsec) / 1e9 > 0.2)
			break;
		if (poll(&pfd, 1, 50) <= 0)
			continue;
		if (recvmsg(fd, &mh, 0) < 0)
			continue;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS)
				memcpy(&rx, CMSG_DATA(c), sizeof(rx));
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
				dst = ((struct in_pktinfo *)CMSG_DATA(c))->ipi_addr;
		}
		memset(&key, 0, sizeof(key));
		memcpy(key.saddr, &src.sin_addr, 4);
		memcpy(key.daddr, &dst, 4);
		key.sport = src.sin_port;
		key.dport = htons(port);
		key.proto = IPPROTO_UDP;
		key.family = AF_INET;
		for (i = 0; i < n; i++)
			if (!memcmp(&flows[i].key, &key, sizeof(key)))
				break;
		if (i < n) {
			flows[i].slow++;
			continue;
		}
		if (n >= MAX_FLOWS || n >= nflows)
			continue;
		struct flow_val val = { .action = action };
		union bpf_attr a;

		memset(&a, 0, sizeof(a));
		a.map_fd = mfd;
		a.key = (__u64)(unsigned long)&key;
		a.value = (__u64)(unsigned long)&val;
		a.flags = BPF_ANY;
		if (sys_bpf(BPF_MAP_UPDATE_ELEM, &a))
			die("flowins: map update: %s", strerror(errno));
		clock_gettime(CLOCK_REALTIME, &ins);
		flows[n].key = key;
		flows[n].insert_ns = rx.tv_sec ? ts_ns(&ins) - ts_ns(&rx) : -1;
		flows[n].slow = 1;
		n++;
		if (n == nflows)
			clock_gettime(CLOCK_MONOTONIC, &done_at);
	}
	long long lat[MAX_FLOWS];
	long slow = 0;
	int m = 0;

	for (int i = 0; i < n; i++) {
		char s[INET_ADDRSTRLEN], d[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, flows[i].key.saddr, s, sizeof(s));
		inet_ntop(AF_INET, flows[i].key.daddr, d, sizeof(d));
		printf("flow %s:%u -> %s:%u insert_ns=%lld slow_packets=%ld\n", s, ntohs(flows[i].key.sport), d,
		       ntohs(flows[i].key.dport), flows[i].insert_ns, flows[i].slow);
		if (flows[i].insert_ns >= 0)
			lat[m++] = flows[i].insert_ns;
		slow += flows[i].slow;
	}
	qsort(lat, m, sizeof(lat[0]), cmp_ll);
	if (m)
		printf("flowins: flows=%d insert_ns min=%lld median=%lld max=%lld slow_packets=%ld\n", n, lat[0],
		       lat[m / 2], lat[m - 1], slow);
	else
		printf("flowins: flows=0 (no packet arrived within %.1f s)\n", timeout);
	return n == nflows ? 0 : 1;
}

static int send_mode(const char *dst, int port, int nflows, int sport, int interval_ms, int packets)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port) };
	char payload[18] = "xdplab-flowins";

	if (inet_pton(AF_INET, dst, &to.sin_addr) != 1)
		die("flowins: --dst %s is not an IPv4 address", dst);
	if (fd < 0)
		die("flowins: socket: %s", strerror(errno));
	for (int f = 0; f < nflows; f++) {
		int s = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
		struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(sport + f) };

		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (s < 0 || bind(s, (struct sockaddr *)&me, sizeof(me)))
			die("flowins: source port %d: %s", sport + f, strerror(errno));
		for (int k = 0; k < packets; k++) {
			if (sendto(s, payload, sizeof(payload), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
				die("flowins: send to %s:%d: %s", dst, port, strerror(errno));
			usleep(interval_ms * 1000 / (packets > 1 ? packets : 1));
		}
		close(s);
		usleep(interval_ms * 1000);
	}
	printf("flowins: sent flows=%d packets=%d\n", nflows, nflows * packets);
	close(fd);
	return 0;
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout, "Usage: flowins --prog-id ID --port P --flows N [--timeout S] [--action drop|pass]\n"
		"       flowins --send --dst A --port P --flows N [--sport S] [--interval-ms M] [--packets K]\n");
	exit(rc);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "prog-id", required_argument, 0, 'i' }, { "port", required_argument, 0, 'p' },
		{ "flows", required_argument, 0, 'n' }, { "timeout", required_argument, 0, 't' },
		{ "action", required_argument, 0, 'a' }, { "send", no_argument, 0, 's' },
		{ "dst", required_argument, 0, 'd' }, { "sport", required_argument, 0, 'S' },
		{ "interval-ms", required_argument, 0, 'I' }, { "packets", required_argument, 0, 'k' },
		{ "help", no_argument, 0, 'h' }, { 0 } };
	long prog_id = -1, port = 9, nflows = 10, sport = 20000, interval = 20, packets = 3;
	double timeout = 10;
	const char *dst = NULL;
	__u32 action = XDP_DROP;
	int send = 0, c;

	xl_prog = "flowins";

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'i': prog_id = parse_long("--prog-id", optarg, 1, 0xffffffffL); break;
		case 'p': port = parse_long("--port", optarg, 1, 65535); break;
		case 'n': nflows = parse_long("--flows", optarg, 1, MAX_FLOWS); break;
		case 't': timeout = parse_long("--timeout", optarg, 1, 3600); break;
		case 'a':
			if (!strcmp(optarg, "drop"))
				action = XDP_DROP;
			else if (!strcmp(optarg, "pass"))
				action = XDP_PASS;
			else
				die("flowins: --action must be drop or pass, got '%s'", optarg);
			break;
		case 's': send = 1; break;
		case 'd': dst = optarg; break;
		case 'S': sport = parse_long("--sport", optarg, 1, 65535); break;
		case 'I': interval = parse_long("--interval-ms", optarg, 0, 10000); break;
		case 'k': packets = parse_long("--packets", optarg, 1, 1000); break;
		case 'h':
			usage(0);
			break;
		default:
			usage(EXIT_USAGE);
		}
	}
	if (send) {
		if (!dst)
			die("flowins: --send needs --dst");
		if (sport + nflows - 1 > 65535)
			die("flowins: --sport %ld + --flows %ld runs past port 65535", sport, nflows);
		return send_mode(dst, port, nflows, sport, interval, packets);
	}
	if (prog_id < 0)
		die("flowins: --prog-id is required (the attached xdp_flow program)");
	return insert_mode(prog_id, port, nflows, timeout, action);
}
