// SPDX-License-Identifier: GPL-2.0-only
/*
 * udpsink: UDP receiver through the socket API (part of the xdplab.testbed
 * collection): the "RX by syscall" side of the xsk-vs-syscall comparison.
 *
 * recvmmsg() of up to --batch datagrams per call on one UDP socket bound to
 * --port (SO_RCVBUF --rcvbuf), optionally with SO_BUSY_POLL. Counts datagrams
 * and frame bytes (payload + 42), cut into bursts like xsksink:
 *   recv <N> packets <B> bits, took <S> sec, <G> gbps <M> mpps
 * then on SIGINT/SIGTERM or after --duration
 *   udpsink: total packets=<N> bytes=<B> bursts=<K>
 *   udpsink: rcvbuf_errors=<E>   (Udp RcvbufErrors of /proc/net/snmp over the run)
 */
#include <getopt.h>
#include <netinet/in.h>
#include <sys/time.h>

#include "xsk_common.h"

#define MAX_BATCH 1024

static long long rcvbuf_errors(void)
{
	char line[1024], head[1024] = "";
	FILE *f = fopen("/proc/net/snmp", "r");
	long long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Udp:", 4))
			continue;
		if (!*head) {
			snprintf(head, sizeof(head), "%s", line);
			continue;
		}
		/* Find the column of RcvbufErrors in the header line. */
		int col = 0, want = -1;
		for (char *t = strtok(head, " \n"); t; t = strtok(NULL, " \n"), col++)
			if (!strcmp(t, "RcvbufErrors"))
				want = col;
		col = 0;
		for (char *t = strtok(line, " \n"); t; t = strtok(NULL, " \n"), col++)
			if (col == want)
				v = atoll(t);
		break;
	}
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' }, { "address", required_argument, NULL, 'a' },
		{ "gap", required_argument, NULL, 'g' }, { "duration", required_argument, NULL, 'd' },
		{ "batch", required_argument, NULL, 'b' }, { "rcvbuf", required_argument, NULL, 'r' },
		{ "busy-poll", no_argument, NULL, 'B' }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	static struct mmsghdr msgs[MAX_BATCH];
	static struct iovec iov[MAX_BATCH];
	static char bufs[MAX_BATCH][2048];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9) };
	struct timeval tv = { .tv_sec = 0, .tv_usec = 50000 };
	struct xl_burst burst = { .gap = 0.25 };
	unsigned int batch = 64;
	int rcvbuf = 4 << 20, o, fd, rc = 0, busy = 0;
	double duration = 0, t0;
	long long err0;

	xl_prog = "udpsink";
	while ((o = getopt_long(argc, argv, "p:a:g:d:b:r:Bh", opts, NULL)) != -1) {
		switch (o) {
		case 'p': a.sin_port = htons((uint16_t)xl_uint("--port", optarg, 1, 65535)); break;
		case 'a':
			if (inet_pton(AF_INET, optarg, &a.sin_addr) != 1)
				xl_usage_error("--address must be an IPv4 address, got '%s'", optarg);
			break;
		case 'g': burst.gap = xl_seconds("--gap", optarg); break;
		case 'd': duration = xl_seconds("--duration", optarg); break;
		case 'b': batch = (unsigned int)xl_uint("--batch", optarg, 1, MAX_BATCH); break;
		case 'r': rcvbuf = (int)xl_uint("--rcvbuf", optarg, 4096, 1 << 30); break;
		case 'B': busy = 50; break;
		case 'h':
			printf("Usage: udpsink [--port P] [--address A] [--gap S] [--duration S] [--batch N] "
			       "[--rcvbuf B] [--busy-poll]\n");
			return 0;
		default: return EXIT_USAGE;
		}
	}
	if (optind < argc)
		xl_usage_error("unexpected argument '%s'", argv[optind]);
	xl_signals();
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		fprintf(stderr, "udpsink: binding UDP port %u failed: %s\n", ntohs(a.sin_port), strerror(errno));
		return 1;
	}
	/* SO_RCVBUFFORCE passes net.core.rmem_max as root; else the capped SO_RCVBUF. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (busy && setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &busy, sizeof(busy))) {
		fprintf(stderr, "udpsink: SO_BUSY_POLL failed: %s\n", strerror(errno));
		return 1;
	}
	for (unsigned int i = 0; i < batch; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof(bufs[i]);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	err0 = rcvbuf_errors();
	printf("udpsink: port=%u batch=%u busy_poll=%d ready\n", ntohs(a.sin_port), batch, busy > 0);
	fflush(stdout);
	t0 = xl_now();
	while (!xl_stop) {
		double now;
		uint64_t bytes = 0;
		int n = recvmmsg(fd, msgs, batch, MSG_WAITFORONE, NULL);

		now = xl_now();
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR) {
				fprintf(stderr, "udpsink: recvmmsg failed: %s\n", strerror(errno));
				rc = 1;
				break;
			}
			n = 0;
		}
		for (int i = 0; i < n; i++)
			bytes += msgs[i].msg_len + HDRS_LEN;
		xl_burst_add(&burst, (uint64_t)n, bytes, now);
		xl_burst_tick(&burst, now, "recv");
		if (duration && now - t0 >= duration)
			break;
	}
	xl_burst_flush(&burst, "recv");
	printf("udpsink: total packets=%llu bytes=%llu bursts=%u\n", (unsigned long long)burst.total_packets,
	       (unsigned long long)burst.total_bytes, burst.bursts);
	if (err0 >= 0)
		printf("udpsink: rcvbuf_errors=%lld\n", rcvbuf_errors() - err0);
	close(fd);
	return rc;
}
