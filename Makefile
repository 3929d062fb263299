# xdplab.testbed: the two commands a new user runs are `make bench` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
COLL_LINK := .collections/ansible_collections/xdplab/testbed
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)
export LC_ALL := C.UTF-8
# The guest kernel the QEMU runner tests boot: built by the kernel role (molecule/kernel) unless given.
GUEST_KERNEL ?= /var/lib/xdplab/kernel/baseline/bzImage

.PHONY: help deps-lab deps deps-apt deps-apt-test deps-apt-check uninstall deps-test venv venv-test collection bench test checks static unit integration qemu faults lint sanity molecule bench-perf build clean vmlab vmlab-up vmlab-down vmlab-test vmlab-faults vmlab-disk-test ee-context bisect-test known-cost-test

help:
	@echo "make bench       install what bench.yml needs, run it on the virtual test bed (BENCH_ARGS=--check: change nothing)"
	@echo "make test        install test deps, run unit, lint, sanity, molecule, integration, qemu and faults"
	@echo "make uninstall   remove what make and the runs added to the host (UNINSTALL_KEEP, UNINSTALL_ARGS=--dry-run)"
	@echo "make bench-perf  generator benchmarks (xdpgen's AF_PACKET path vs trafgen, paced rates) and harness overhead"
	@echo "make build       ansible-galaxy collection build"
	@echo "make vmlab       the lab in a box: guests up, smoke check over ssh, guests down"
	@echo "make vmlab-test  molecule/vmlab (real drivers tuned, XDP native, driver selftests), then vmlab-faults"
	@echo "make vmlab-faults  a run SIGKILLed on the lab's real drivers, then teardown: all as before"
	@echo "make vmlab-disk-test  kernels installed on a DUT that boots GRUB from its disk: boot once, verify, fall back"
	@echo "make known-cost-test  bench.yml's program stage against BPF_PROG_TEST_RUN for the xdp_drop/xdp_drop_work pair (quiet host)"
	@echo "make bisect-test  playbooks/bisect.yml under QEMU: a culprit around a patch that does not build, a null series"

# Debian packages (root), by tools/host_deps.py: it installs only the missing ones and records what the
# transaction added, for `make uninstall`. `make bench` takes requirements-apt.txt (what bench.yml needs);
# `make test` adds requirements-apt-test.txt and the apt sources of files/apt (bookworm-backports, and
# the .pref pins that move a package's dependencies to the same suite; trixie-backports, pinned so that
# linux-source-7.3 alone comes from it), which the tool adds only after
# checking the host is the Debian release they are made for. A stamp keyed on the lists and sources
# avoids re-running apt. With `--check` in BENCH_ARGS, `make bench` only says what it would install.
APT_SOURCES := $(wildcard files/apt/*.sources)
APT_PREFS := $(wildcard files/apt/*.pref)
HOST_DEPS := $(PYTHON) tools/host_deps.py
BENCH_CHECK := $(filter --check -C,$(BENCH_ARGS))
define need_root
	@if [ "$$(id -u)" != 0 ]; then echo "make: run as root (apt-get, netns, XDP)"; exit 1; fi
endef
$(VENV)/.apt-stamp: requirements-apt.txt
	$(need_root)
	$(HOST_DEPS) install requirements-apt.txt
	mkdir -p $(VENV) && touch $@

$(VENV)/.apt-test-stamp: requirements-apt.txt requirements-apt-test.txt $(APT_SOURCES) $(APT_PREFS)
	$(need_root)
	$(HOST_DEPS) install --sources files/apt requirements-apt.txt requirements-apt-test.txt
	mkdir -p $(VENV) && touch $@ $(VENV)/.apt-stamp

deps-apt: $(if $(BENCH_CHECK),deps-apt-check,$(VENV)/.apt-stamp)
deps-apt-test: $(VENV)/.apt-test-stamp
deps-apt-check:
	@$(HOST_DEPS) install --dry-run requirements-apt.txt

# Everything `make` and the collection's runs added to the host (README, "What make adds to the
# host"): the recorded packages, the apt sources and pins, /var/lib/xdplab, /var/cache/xdplab,
# /run/xdplab, the kernel build user. UNINSTALL_KEEP: what to keep, e.g. "state cache qemu-system-x86"
# (`packages` keeps all packages). UNINSTALL_ARGS=--dry-run says what it would remove.
uninstall:
	$(need_root)
	$(HOST_DEPS) uninstall $(UNINSTALL_ARGS) --keep $(UNINSTALL_KEEP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The venv installs from a local wheelhouse of the pinned requirements, filled from the package index by
# `pip wheel` the first time (and again when a requirement is not in it): a fresh clone then installs with
# no round trip to the index, in about half the time. Byte code is compiled when a module is first imported.
WHEELHOUSE := $(if $(filter 0,$(shell id -u)),/var/cache/xdplab/wheels,$(HOME)/.cache/xdplab/wheels)
PIP := $(BIN)/pip -q --disable-pip-version-check
define pip_install
	$(PIP) install --no-compile --no-index --find-links $(WHEELHOUSE) -r $(1) 2>/dev/null \
	    || { $(PIP) wheel -w $(WHEELHOUSE) -r $(1) && $(PIP) install --no-compile --no-index --find-links $(WHEELHOUSE) -r $(1); }
endef

$(VENV)/.runtime-stamp: requirements.txt | $(BIN)/python
	$(call pip_install,requirements.txt)
	touch $@

$(VENV)/.test-stamp: requirements.txt requirements-test.txt | $(BIN)/python
	$(call pip_install,requirements-test.txt)
	touch $@ $(VENV)/.runtime-stamp

venv: $(VENV)/.runtime-stamp
venv-test: $(VENV)/.test-stamp

# The working tree is the collection: link it where ansible.cfg looks.
collection:
	@mkdir -p $(dir $(COLL_LINK))
	@[ -L $(COLL_LINK) ] || ln -sfn ../../.. $(COLL_LINK)

deps: deps-apt venv collection
deps-test: deps-apt-test venv-test collection
# The lab in a box needs QEMU, mmdebstrap and the kernel source of the test list.
deps-lab: deps-apt-test venv collection

bench: deps
	$(BIN)/ansible-playbook bench.yml $(BENCH_ARGS)

# Order matters: molecule/kernel builds the guest kernel that the integration, qemu and fault tests boot.
# molecule/vmlab (the lab in a box) is not in it: beside the host tests its emulated guests' load took the
# A/B known-effect test (tests/qemu) below its effect, and after them it would take the run past 45 minutes.
# `make vmlab-test` runs it.
# Each stage says how long it took, so a CI log shows where the time goes. The first, `checks`, runs three
# lanes side by side, each printed whole when it ends: the unit tests; the static checks (ruff and
# ansible-lint, then ansible-test sanity); the molecule scenarios, whose ansible runs leave most of a core
# idle. Integration runs its files in two workers (tests/integration/conftest.py).
TEST_STAGES := checks integration qemu faults
define timed
	start=$$(date +%s); $(MAKE) --no-print-directory $(1) || exit $$?; \
	    echo "make test: $(1) took $$(( $$(date +%s) - start )) s"
endef
test: deps-test
	@for stage in $(TEST_STAGES); do $(call timed,$$stage); done

checks:
	@$(MAKE) --no-print-directory -j3 --output-sync=recurse timed-unit timed-static timed-molecule
timed-%:
	@$(call timed,$*)
static:
	@for stage in lint sanity; do $(call timed,$$stage); done

unit:
	$(BIN)/pytest -q tests/unit

integration:
	XDPLAB_GUEST_KERNEL=$(GUEST_KERNEL) $(BIN)/pytest -q -n 2 --dist loadgroup --no-loadscope-reorder --durations=30 tests/integration

# Host-side tests that boot the guest kernel under QEMU and run tests/qemu/test_* inside it.
qemu:
	XDPLAB_GUEST_KERNEL=$(GUEST_KERNEL) $(BIN)/pytest -q -p no:cacheprovider --durations=10 $(wildcard tests/qemu/test_*_runner.py)

# playbooks/bisect.yml end to end on the embedded QEMU DUT (docs/bisect.md): a culprit located around a
# patch that does not build, a resumed step, a null series. Apart from `make qemu` until its time is
# measured: it builds four prefix kernels through ccache (the base from molecule/kernel's cache).
bisect-test:
	XDPLAB_GUEST_KERNEL=$(GUEST_KERNEL) $(BIN)/pytest -q -p no:cacheprovider --durations=5 tests/qemu/test_bisect_loop.py

# The known-cost check of the DUT cost accounting (docs/results.md): outside `make test` until it holds its
# 3% bound on this machine kind (it measured -3.2%, +4.4% and -5.6% on a loaded host); run it on a quiet one.
known-cost-test: deps-test
	$(BIN)/pytest -q tests/known_cost

# Fault injection on real bench.yml runs (tests/faults): nothing lost, nothing left behind.
faults:
	$(BIN)/pytest -q --durations=10 tests/faults

lint:
	$(BIN)/ruff check plugins tests
	$(BIN)/ansible-lint --profile production

# ansible-test sanity on the collection (its venvs, one per test, from the package index).
# ansible-test needs the real path to end in ansible_collections/xdplab/testbed (a link is
# resolved), so the tracked and new files are copied to such a tree under build/, a git
# repository of its own (ansible-test tests the files git lists).
# It bootstraps pip in its venvs with a get-pip script it downloads; offline, the stand-in
# tools/get_pip_offline.py (ensurepip, then pip install) is placed in its cache.
ANSIBLE_TEST_CACHE := $(HOME)/.ansible/test/cache
SANITY_TREE := build/sanity/ansible_collections/xdplab/testbed
# SANITY_ARGS: e.g. '--test pylint' to run one test.
SANITY_PYTHON := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
sanity: venv-test
	@pip_version=$$($(BIN)/python -c 'import pathlib, re, ansible_test; \
	    p = pathlib.Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py"; \
	    print(re.search(r"pip=.([0-9.]+).", p.read_text()).group(1))'); \
	cached=$(ANSIBLE_TEST_CACHE)/get_pip_$${pip_version//./_}.py; \
	[ -e $$cached ] || install -D -m 0644 tools/get_pip_offline.py $$cached
	rm -rf $(SANITY_TREE) && mkdir -p $(SANITY_TREE)
	git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} sh -c '[ -e "{}" ] && printf "%s\0" "{}"' \
	    | tar --null -T - -cf - | tar -xf - -C $(SANITY_TREE)
	cd $(SANITY_TREE) && git init -q && git add -A && $(CURDIR)/$(BIN)/ansible-test sanity --venv --python $(SANITY_PYTHON) --color no $(SANITY_ARGS)

# The scenarios `make test` runs; molecule/vmlab (guests under emulation) runs with `make vmlab-test`.
# `make molecule-<scenario>` runs one.
MOLECULE_SCENARIOS := default kernel tuning
molecule:
	cd $(CURDIR) && for s in $(MOLECULE_SCENARIOS); do $(BIN)/molecule test -s $$s || exit 1; done

molecule-%:
	cd $(CURDIR) && $(BIN)/molecule test -s $*

# First xdpgen's AF_PACKET path against trafgen side by side (ratio, 1 and 2 threads, paced rates:
# tools/fallback_bench.py, FALLBACK_ARGS for its options), then the playbook's generator and harness figures.
bench-perf: deps
	$(BIN)/python tools/fallback_bench.py $(FALLBACK_ARGS)
	$(BIN)/ansible-playbook playbooks/bench_perf.yml $(BENCH_ARGS)

# The lab in a box (inventories/vmlab): QEMU guests with igb and virtio-net reached over ssh. `make vmlab`
# brings them up (building the guest kernel and root image when missing), installs the targets'
# prerequisites, checks them over ssh, and always takes them down again.
VMLAB_INV := -i inventories/vmlab
# $(call lab_run,<vmlab_up.yml arguments>,<&& command run with the lab up>): the lab up, the targets'
# prerequisites (pyroute2), the command; the lab always taken down again, the status of the whole.
lab_run = rc=0; $(BIN)/ansible-playbook $(VMLAB_INV) playbooks/vmlab_up.yml $(1) $(VMLAB_ARGS) \
	  && $(BIN)/ansible-playbook $(VMLAB_INV) playbooks/prereqs.yml $(VMLAB_ARGS) $(2) || rc=1; \
	$(BIN)/ansible-playbook $(VMLAB_INV) playbooks/vmlab_down.yml $(VMLAB_ARGS) || rc=1; \
	exit $$rc
vmlab-up: deps-lab
	$(BIN)/ansible-playbook $(VMLAB_INV) playbooks/vmlab_up.yml $(VMLAB_ARGS)

vmlab-test: deps-test
	$(MAKE) --no-print-directory molecule-vmlab
	$(MAKE) --no-print-directory vmlab-faults
	$(MAKE) --no-print-directory vmlab-disk-test

# A run SIGKILLed on the lab's real drivers, then teardown (tests/vmlab): the lab is brought up for it
# and always taken down again.
vmlab-faults: deps-test
	@$(call lab_run,,&& $(BIN)/pytest -q tests/vmlab)

# The kernel role's real install path (tests/vmlab_disk): the lab's DUT boots GRUB from its own disk; kernels
# built on the controller are installed, booted once with grub-reboot and verified; a kernel that panics
# comes back on the default entry; the loop's sweeps run between the guests, so the targets' prerequisites
# (pyroute2) go in first. The lab is brought up for it and always taken down again.
vmlab-disk-test: deps-test
	@$(call lab_run,-e vmlab_dut_boot=disk,&& $(BIN)/pytest -q tests/vmlab_disk)

vmlab-down: deps-lab
	$(BIN)/ansible-playbook $(VMLAB_INV) playbooks/vmlab_down.yml $(VMLAB_ARGS)

vmlab: deps-lab
	@$(call lab_run,,)

build: venv
	$(BIN)/ansible-galaxy collection build --force --output-path build/

# The execution environment's build context (build/ee): the image carries the collection's tarball.
ee-context: build venv-test
	$(BIN)/ansible-builder create -f execution-environment.yml -c build/ee

clean:
	rm -rf build .pytest_cache .ruff_cache
