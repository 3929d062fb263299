// SPDX-License-Identifier: GPL-2.0-only
/*
 * udpgen: UDP sender through the socket API (part of the xdplab.testbed
 * collection): the "TX by syscall" side of the xsk-vs-syscall comparison.
 *
 * sendmmsg() of --batch datagrams per call on --flows connected UDP sockets
 * (source ports sport..sport+flows-1), until --count or --duration. --size is
 * the Ethernet frame the datagram becomes (payload = size - 42), so figures
 * compare with xskgen's. Prints the xskgen contract line
 *   sent <N> packets <B> bits, took <S> sec, <G> gbps <M> mpps
 * where N counts datagrams the kernel accepted. Exit 0, 1 runtime error, 2 usage.
 */
#include <getopt.h>
#include <netinet/in.h>

#include "xsk_common.h"

#define MAX_BATCH 1024

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' }, { "count", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'd' }, { "batch", required_argument, NULL, 'b' },
		{ "src-ip", required_argument, NULL, 'S' }, { "dst-ip", required_argument, NULL, 'D' },
		{ "sport", required_argument, NULL, 'p' }, { "dport", required_argument, NULL, 'P' },
		{ "flows", required_argument, NULL, 'f' }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	static struct mmsghdr msgs[MAX_BATCH];
	static struct iovec iov[MAX_BATCH];
	static char payload[9000];
	struct in_addr src = { 0 }, dst;
	uint64_t count = 0, sent = 0, errors = 0;
	double duration = 5, t0, t1;
	unsigned int batch = 64, sport = 9, dport = 9, flows = 1;
	size_t size = 64;
	bool have_count = false, have_duration = false;
	int o, *fds, rc = 0, last_err = 0;

	xl_prog = "udpgen";
	inet_pton(AF_INET, "198.18.0.2", &dst);
	while ((o = getopt_long(argc, argv, "s:n:d:b:S:D:p:P:f:h", opts, NULL)) != -1) {
		switch (o) {
		case 's': size = (size_t)xl_uint("--size", optarg, MIN_FRAME, sizeof(payload) + HDRS_LEN); break;
		case 'n': count = xl_uint("--count", optarg, 1, UINT64_MAX); have_count = true; break;
		case 'd': duration = xl_seconds("--duration", optarg); have_duration = true; break;
		case 'b': batch = (unsigned int)xl_uint("--batch", optarg, 1, MAX_BATCH); break;
		case 'S':
		case 'D':
			if (inet_pton(AF_INET, optarg, o == 'S' ? &src : &dst) != 1)
				xl_usage_error("%s must be an IPv4 address, got '%s'", o == 'S' ? "--src-ip" : "--dst-ip",
					       optarg);
			break;
		case 'p': sport = (unsigned int)xl_uint("--sport", optarg, 1, 65535); break;
		case 'P': dport = (unsigned int)xl_uint("--dport", optarg, 1, 65535); break;
		case 'f': flows = (unsigned int)xl_uint("--flows", optarg, 1, 1024); break;
		case 'h':
			printf("Usage: udpgen [--size B] [--count N | --duration S] [--batch N] [--src-ip A] "
			       "[--dst-ip A] [--sport P] [--dport P] [--flows N]\n");
			return 0;
		default: return EXIT_USAGE;
		}
	}
	if (optind < argc)
		xl_usage_error("unexpected argument '%s'", argv[optind]);
	if (have_count && have_duration)
		xl_usage_error("--count and --duration are mutually exclusive");
	if (sport + flows - 1 > 65535)
		xl_usage_error("--flows %u with --sport %u runs past port 65535", flows, sport);
	xl_signals();
	fds = calloc(flows, sizeof(*fds));
	for (unsigned int i = 0; i < flows; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr = src, .sin_port = htons((uint16_t)(sport + i)) };
		struct sockaddr_in d = { .sin_family = AF_INET, .sin_addr = dst, .sin_port = htons((uint16_t)dport) };
		int one = 1;

		fds[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fds[i] < 0 || setsockopt(fds[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(fds[i], (struct sockaddr *)&a, sizeof(a)) || connect(fds[i], (struct sockaddr *)&d, sizeof(d))) {
			fprintf(stderr, "udpgen: UDP socket %s:%u -> %s:%u failed: %s\n", inet_ntoa(src), sport + i,
				inet_ntoa(dst), dport, strerror(errno));
			return 1;
		}
	}
	for (unsigned int i = 0; i < batch; i++) {
		iov[i].iov_base = payload;
		iov[i].iov_len = size - HDRS_LEN;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	printf("udpgen: size=%zu payload=%zu batch=%u flows=%u\n", size, size - HDRS_LEN, batch, flows);
	t0 = t1 = xl_now();
	for (uint64_t k = 0; !xl_stop; k++) {
		unsigned int want = batch;
		int n;

		if (count && sent >= count)
			break;
		if (!count && (k & 15) == 0 && (t1 = xl_now()) - t0 >= duration)
			break;
		if (count && count - sent < want)
			want = (unsigned int)(count - sent);
		n = sendmmsg(fds[k % flows], msgs, want, 0);
		if (n > 0) {
			sent += (uint64_t)n;
		} else if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR || errno == ECONNREFUSED) {
			errors++;
		} else {
			last_err = errno;
			fprintf(stderr, "udpgen: sendmmsg failed: %s\n", strerror(errno));
			rc = 1;
			break;
		}
	}
	t1 = xl_now();
	xl_report("sent", sent, sent * size, t1 - t0);
	printf("udpgen: send_errors=%llu\n", (unsigned long long)errors);
	if (!sent && !rc) {
		fprintf(stderr, "udpgen: no datagram was accepted%s%s\n", last_err ? ": " : "",
			last_err ? strerror(last_err) : "");
		rc = 1;
	}
	return rc;
}
