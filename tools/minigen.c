// SPDX-License-Identifier: GPL-2.0-only
/*
 * minigen: the smallest live-frame XDP generator, as a yardstick for xdpgen.
 * One thread, no options beyond the essentials, no dispatcher pin:
 *   minigen IFACE SECONDS REPEAT
 * loads `return bpf_redirect(ifindex, 0)`, runs BPF_PROG_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES and repeat=REPEAT until SECONDS have passed,
 * with a 64-byte broadcast Ethernet/IPv4/UDP frame, and prints
 *   minigen: packets=<N> seconds=<S> pps=<P>
 * Build: gcc -O2 -o minigen minigen.c -lbpf
 */
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned char pkt[64] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00,
		0x45, 0, 0, 50, 0, 0, 0x40, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2,
		0, 9, 0, 9, 0, 30, 0, 0,
	};
	unsigned int ifindex, repeat;
	unsigned long long packets = 0;
	double secs, t0, t1;
	unsigned int sum = 0;
	int fd;

	if (argc != 4 || !(ifindex = if_nametoindex(argv[1]))) {
		fprintf(stderr, "usage: minigen IFACE SECONDS REPEAT\n");
		return 2;
	}
	secs = atof(argv[2]);
	repeat = (unsigned int)strtoul(argv[3], NULL, 10);
	for (int i = 14; i < 34; i += 2)
		sum += (unsigned int)(pkt[i] << 8 | pkt[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	pkt[24] = (unsigned char)(~sum >> 8);
	pkt[25] = (unsigned char)~sum;

	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 1, .imm = (int)ifindex },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 2, .imm = 0 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_redirect },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "minigen", "GPL", insns, 4, NULL);
	if (fd < 0) {
		perror("bpf_prog_load");
		return 1;
	}
	struct xdp_md ctx = { .data_end = sizeof(pkt), .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt, .data_size_in = sizeof(pkt),
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx),
		    .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .repeat = repeat);
	t0 = now();
	do {
		if (bpf_prog_test_run_opts(fd, &opts)) {
			perror("bpf_prog_test_run_opts");
			return 1;
		}
		packets += repeat;
		t1 = now();
	} while (t1 - t0 < secs);
	printf("minigen: packets=%llu seconds=%.6f pps=%.2f\n", packets, t1 - t0,
	       (double)packets / (t1 - t0));
	return 0;
}
