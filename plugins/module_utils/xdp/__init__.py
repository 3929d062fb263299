"""XDP and BPF: bpf(2) through ctypes (_bpf) and the program objects, sections and map entries the
xdp_prog module attaches (_program_objects). Imports only xdp."""
