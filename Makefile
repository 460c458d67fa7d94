# metaquorum: every command a user or CI runs goes through here.
#   make run    - run a local quorum (see README)
#   make test   - set everything up on a fresh machine and run every test tier
SHELL := /bin/bash
.DEFAULT_GOAL := help

PY_BOOT  ?= python3
TOOLS    := .tools
UV       := $(TOOLS)/bin/uv
UV_VER   := 0.13.9
VENV     := .venv
BIN      := $(VENV)/bin
PYTEST   := $(BIN)/pytest
KAFKA_VERSION := $(shell cat KAFKA_VERSION)
# METAQUORUM_CACHE from the environment is honoured (CACHE=... on the command line wins)
CACHE    ?= $(or $(METAQUORUM_CACHE),$(HOME)/.cache/metaquorum)
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))
export METAQUORUM_CACHE := $(CACHE)
export KAFKA_VERSION

.PHONY: help setup lint unit scenarios sim conformance integration e2e pipeline nemesis-short nemesis containers test run bench generate kafka-jars clean

help:
	@echo "make run         run the product (a local quorum)"
	@echo "make test        set up and run every test tier (what CI runs)"
	@echo "make lint        ruff, ruff format --check, mypy strict, import-linter"
	@echo "make unit | scenarios | sim | compiled-tier | conformance | integration | e2e | pipeline | nemesis-short   one tier"
	@echo "make sim-long    the full simulation campaign, 4,950 seeds (not in make test)"
	@echo "make sim-reach   the simulator's reach table: protocol paths and worst moments per mix (SEEDS=50)"
	@echo "make sim-digest  the traces of seeds 0-199 of every mix unchanged? (not in make test)"
	@echo "make containers  the node/operator images built without Docker, checked and run by runc/containerd (root)"
	@echo "make nemesis     the long nemesis campaign (NEMESIS_RUNS x NEMESIS_SECONDS; not in make test)"
	@echo "make e2e-long    the several-minute e2e scenarios (backup/restore, recovery, adoption, ...; not in make test)"
	@echo "make e2e-nemesis-k8s the Kubernetes nemesis, E2E_K8S_NEMESIS_RUNS (10) x SCHEDULES (10) schedules (not in make test)"
	@echo "make e2e-nemesis the operator nemesis, E2E_NEMESIS_SEQUENCES (100) sequences (not in make test)"
	@echo "make soak        hours of a TLS quorum under fixed load, sampled; fails on a trend (SOAK_SECONDS=3600)"
	@echo "make bench       side-by-side benchmarks, ~12 min (not part of make test)"
	@echo "make bench-quick a ~2 minute smoke run of the benchmarks (BENCH_TLS=1: ours on mutual TLS)"
	@echo "make compiled    the compiled hot path (mypyc) in build/compiled; BUILD=pure: run and bench without it"
	@echo "make generate    regenerate protocol message classes from our schemas"
	@echo "make cluster     a real single-node Kubernetes that stays up (cluster-down | cluster-status | cluster-shell; KIND=1: kind)"
	@echo "make quickstart  README's quickstart run verbatim on make cluster, the host checked clean after"
	@echo "make images      node/operator OCI archives + SBOMs in dist/;  make chart: the chart package in dist/"

$(UV):
	$(PY_BOOT) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install -q --disable-pip-version-check uv==$(UV_VER)

# The venv's interpreter: the fastest CPython here (Debian's PGO/LTO build when present; issue 28,
# scripts/fast-python.sh). PYTHON=/path/to/python3.11 overrides; a venv built on another one is
# rebuilt on this one.
VENV_PYTHON := $(shell scripts/fast-python.sh)

$(VENV)/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --frozen --all-extras --quiet --python $(VENV_PYTHON)
	@touch $@

# Issue 28: the compiled hot path (mypyc over the core, the record batches, the byte reader, the
# runtime's write path and the simulator) in a copy of the package, build/compiled
# (scripts/build_compiled.py; rebuilt when a source changes, ~4.5 min). `make run`, the bench
# and the tiers that run real nodes (conformance, integration, nemesis-short, pipeline) use it
# unless BUILD=pure (the node image, and so the e2e tier, always: its build stage compiles the
# same tree, node/Dockerfile); the pure-Python package stays the reference: unit, scenarios, slow
# and sim run it, and the `compiled` tier checks the two give the same traces and pass the same
# unit tests.
BUILD ?= compiled
COMPILED := $(CURDIR)/build/compiled
ifeq ($(BUILD),compiled)
WITH_BUILD := PYTHONPATH=$(COMPILED)
BUILD_DEP := compiled
else ifneq ($(BUILD),pure)
$(error BUILD=$(BUILD): use BUILD=compiled (default) or BUILD=pure)
endif

.PHONY: compiled
compiled: setup
	@$(BIN)/python scripts/build_compiled.py >/dev/null

setup: $(VENV)/.synced
	@if [ "$$(readlink -f $(BIN)/python)" != "$$(readlink -f $(VENV_PYTHON))" ]; then \
		echo "setup: rebuilding $(VENV) on $(VENV_PYTHON)"; \
		$(UV) sync --frozen --all-extras --quiet --python $(VENV_PYTHON) && touch $(VENV)/.synced; fi

# Kafka's published jars, resolved from Maven Central and cached by version (the oracle tier).
kafka-jars: setup
	scripts/kafka-jars.sh

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

generate: setup
	$(BIN)/python -m metaquorum.protocol.codegen

# pytest exits 5 when a tier has no test yet; that is reported, not counted as a pass or failure.
define run_tier
	@echo "=== tier: $(1)"; \
	$(4) $(PYTEST) -m "$(2)" $(3); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "tier $(1): no tests collected yet"; rc=0; fi; \
	exit $$rc
endef

# The unit tier's tests (the scenarios among them): everything but the marked tiers.
UNIT_MARKERS := not slow and not integration and not simulation and not conformance and not e2e and not pipeline and not nemesis and not containers
unit: setup
	$(call run_tier,unit,$(UNIT_MARKERS),-n $(TEST_WORKERS))

scenarios: setup
	$(call run_tier,scenarios,$(UNIT_MARKERS),tests/scenarios)

# Issue 28: the compiled build against the pure-Python reference. The simulator's traces of
# seeds 0-(COMPILED_SEEDS-1) of every mix must be the same on build/compiled as on this package
# (tests/sim/trace_digest.py --against-build; the child must have loaded the compiled core), and
# the unit tier (with the scenarios) passes on it. sim runs the pure-Python package (its planted-bug
# simulations replace core functions, which compiled modules do not call); the tiers with real
# nodes run the compiled build, and their planted bugs the pure package (tests/pure_build.py).
COMPILED_SEEDS ?= 40
.PHONY: compiled-tier
compiled-tier: compiled
	@echo "=== tier: compiled"
	$(BIN)/python -m tests.sim.trace_digest --against-build $(COMPILED) --seeds $(COMPILED_SEEDS)
	PYTHONPATH=$(COMPILED) $(PYTEST) -q -n $(TEST_WORKERS) -m "$(UNIT_MARKERS)"

# The seeded simulations are CPU-bound and independent: one pytest-xdist worker per core.
SIM_WORKERS ?= auto
# unit, slow, conformance and integration run on every core (pytest-xdist; their items pick free
# ports and own tmp dirs; integration's quorums mostly wait, 3 CPU-min in 8.5 min at load 20, and
# passed so): in one process on 2 idle cores the four took 636 s; TEST_WORKERS=0 runs them in one
TEST_WORKERS ?= auto
# `make sim` (in make test) runs the CI campaign, 1,490 seeds in short items; `make sim-long`
# the full campaign, 4,950 seeds (tests/sim/test_campaign.py), not in make test.
sim: setup
	$(call run_tier,simulation,simulation and not sim_long,-n $(SIM_WORKERS))

.PHONY: sim-long
sim-long: setup
	$(call run_tier,simulation-long,sim_long,-n $(SIM_WORKERS) tests/sim)

# Issue 33: how often each protocol path and worst moment is reached, per mix (docs/sim-reach.md).
SEEDS ?= 50
.PHONY: sim-reach
sim-reach: setup
	nice -n 10 $(BIN)/python -m metaquorum.sim.reach_table --seeds $(SEEDS) --jobs 2

# Per-mix digests of the traces of seeds 0-199 of every mix against tests/sim/trace_digests.txt
# (not in make test; a few minutes): a reshaping of the core or the simulator changes none.
.PHONY: sim-digest
sim-digest: setup
	$(BIN)/python -m tests.sim.trace_digest --check

conformance: kafka-jars $(BUILD_DEP)
	$(call run_tier,conformance,conformance,-n $(TEST_WORKERS),$(WITH_BUILD))

# libfiu (apt) for the storage-fault tests: real EIO from fsync in a running node; SeaweedFS's
# `weed` (the backup tests' S3 server, built once from the Go module proxy and cached).
integration: setup $(BUILD_DEP)
	@scripts/libfiu.sh >/dev/null
	@scripts/build-seaweedfs.sh >/dev/null
	$(call run_tier,integration,integration,-n $(TEST_WORKERS),$(WITH_BUILD))

e2e: setup
	@if [ -x e2e/run.sh ]; then e2e/run.sh; else echo "tier e2e: not built yet"; fi

# The e2e scenarios of several minutes each (marker e2e_long; not in make test, whose e2e tier
# leaves them out to keep CI near its budget): scheduled backups + restoreFrom, adoption of a
# static quorum, the offline filesystem-resize roll, the k8s nemesis's broken node. ~14 min on
# the real-kubelet target.
.PHONY: e2e-long
e2e-long: setup
	E2E_MARK=e2e_long e2e/run.sh

# The operator nemesis for longer (not in make test; make e2e runs it with 20 sequences):
# E2E_NEMESIS_SEQUENCES sequences of scale / kill -9 / PVC loss / operator restart on one quorum,
# a random seed printed first (E2E_NEMESIS_SEED=S re-runs one). docs/operator.md.
E2E_NEMESIS_SEQUENCES ?= 100
.PHONY: e2e-nemesis
e2e-nemesis: setup
	E2E_NEMESIS_SEQUENCES=$(E2E_NEMESIS_SEQUENCES) e2e/run.sh -k operator_nemesis_keeps -s

# The soak (issue 33, docs/soak.md; not in make test): a 3-voter quorum on mutual TLS under
# SOAK_RATE appends/s offered at a fixed rate for SOAK_SECONDS, a leader transfer every 3 min,
# node 3 replaced (disk wiped, re-added) every 15 min, each node sampled every 10 s; writes
# samples.jsonl, events.jsonl, report.md and plots to SOAK_OUT (a new directory) and fails on
# a trend. Its harness is checked in the integration tier (tests/soak/test_soak_short.py).
SOAK_SECONDS ?= 3600
SOAK_RATE ?= 100
SOAK_OUT ?= $${TMPDIR:-/tmp}/metaquorum-soak-$$(date +%Y%m%d-%H%M%S)
.PHONY: soak
soak: setup
	$(BIN)/python -m tests.soak.run --seconds $(SOAK_SECONDS) --rate $(SOAK_RATE) --out $(SOAK_OUT)

# The Kubernetes nemesis for longer (issue 33, docs/k8s-nemesis.md; not in make test, whose e2e
# tier runs 1 history of 10 schedules of one fault): E2E_K8S_NEMESIS_RUNS histories (each a fresh
# quorum, client, porcupine check and ledger) of E2E_K8S_NEMESIS_SCHEDULES seeded schedules of
# E2E_K8S_NEMESIS_FAULTS faults each (pod
# partitions, frozen containers, kill -9, API server outages of 30-90 s, node agents restarted, a
# node reboot, a lost PVC, and the operator's own work under a fault: its pod cut from the quorum
# during a roll, a scale 3->5->3, a roll) on the real-kubelet target, checked by porcupine, the
# ledger and the operator's invariants; then the broken node and the broken operator. ~40 s a
# schedule of one fault, ~60-90 s of two. E2E_K8S_NEMESIS_SEED=S re-runs a seed.
E2E_K8S_NEMESIS_RUNS ?= 10
E2E_K8S_NEMESIS_SCHEDULES ?= 10
E2E_K8S_NEMESIS_FAULTS ?= 2
.PHONY: e2e-nemesis-k8s
e2e-nemesis-k8s: setup
	E2E_K8S_NEMESIS_RUNS=$(E2E_K8S_NEMESIS_RUNS) E2E_K8S_NEMESIS_SCHEDULES=$(E2E_K8S_NEMESIS_SCHEDULES) \
	E2E_K8S_NEMESIS_FAULTS=$(E2E_K8S_NEMESIS_FAULTS) E2E_K8S_NEMESIS_LONG=1 \
		e2e/run.sh e2e/test_k8s_nemesis.py e2e/test_k8s_nemesis_broken.py e2e/k8s_broken_operator_check.py -s

# The Spark data pipeline (issue 17): real Spark on local[2] and a standalone master + 2 workers
# on loopback, started from the installed pyspark's own scripts (Java 17 on the machine).
pipeline: setup $(BUILD_DEP)
	@scripts/java.sh >/dev/null
	$(call run_tier,pipeline,pipeline,,$(WITH_BUILD))

# The nemesis tier (issue 18, docs/nemesis.md): 3 real nodes, each in its own network namespace
# (needs root), under kill -9, pause, partitions, packet loss, a slow link and fsync EIO; the
# clients' history checked by porcupine and a ledger. A few minutes: 3 seeds x 40 s, plus the
# broken-node runs that show the checker fails. Run dirs under $$TMPDIR/metaquorum-nemesis*.
nemesis-short: setup $(BUILD_DEP)
	@scripts/nemesis-tools.sh >/dev/null
	$(call run_tier,nemesis,nemesis,tests/nemesis,$(WITH_BUILD))

# The long campaign (not in make test): NEMESIS_RUNS seeded runs of NEMESIS_SECONDS each from
# NEMESIS_SEED on, process and network faults overlapping (--compose), odd seeds on a dynamic
# (KIP-853) quorum with remove-controller and disk-wipe faults (--mix), clock steps both ways,
# full disks; passing runs keep their summary and logs, not their data, under NEMESIS_OUT (its
# own dir, so `python -m tests.nemesis.report` sees no other run; docs/nemesis-campaign/).
NEMESIS_RUNS ?= 200
NEMESIS_SECONDS ?= 60
NEMESIS_SEED ?= 1000
NEMESIS_OUT ?= $${TMPDIR:-/tmp}/metaquorum-nemesis-campaign
NEMESIS_KINDS ?= kill,pause,isolate,bridge,one-way,loss,slow,disk,full,clock-fwd,clock-back,delay,reorder
nemesis: setup
	@scripts/nemesis-tools.sh >/dev/null
	$(BIN)/python -m tests.nemesis.run --runs $(NEMESIS_RUNS) --duration $(NEMESIS_SECONDS) \
		--seed $(NEMESIS_SEED) --kinds $(NEMESIS_KINDS) --compose --mix --out $(NEMESIS_OUT)

# The containers tier (issue 19, docs/e2e.md; not in make test, whose e2e tier runs the same
# images on a real kubelet): the node and operator images built without Docker from Debian's
# packages + the Dockerfiles (e2e/tools/build-images.sh, cached by content), compared with the
# Dockerfiles and run with runc/containerd. Needs root.
containers: setup
	$(call run_tier,containers,containers,tests/containers)

slow: setup
	$(call run_tier,slow,slow and not integration and not simulation and not conformance and not e2e and not pipeline and not nemesis and not containers,-n $(TEST_WORKERS))

# The e2e tier's builds (Go, images; cached) start first in the background, niced, so a fresh
# machine's ~15 min of them overlap the tiers before e2e (e2e/tools/prebuild.sh; stopped when
# this make exits). Then the tiers, one after another.
TIERS := lint unit slow sim compiled-tier conformance integration nemesis-short e2e pipeline
test: setup
	@e2e/tools/prebuild.sh $$PPID
	@$(MAKE) --no-print-directory $(TIERS)
	@echo "make test: all tiers done"

run: setup $(BUILD_DEP)
	@$(WITH_BUILD) $(BIN)/python -m metaquorum.runtime.local_quorum --dir $${TMPDIR:-/tmp}/metaquorum-local-quorum --voters 3

# Side-by-side benchmark (docs/bench.md): ours, etcd, Kafka's TestRaftServer, PySyncObj; about
# 15 minutes; results in bench/results/. Not part of `make test`; nothing asserts speed.
bench: setup $(BUILD_DEP)
	$(WITH_BUILD) $(BIN)/python -m bench

# The same in about 2 minutes (2 client counts, 1 rate, 2 kills each); results under $TMPDIR.
.PHONY: bench-quick
bench-quick: setup $(BUILD_DEP)
	$(WITH_BUILD) $(BIN)/python -m bench --quick --out $${TMPDIR:-/tmp}/metaquorum-bench-quick

# --- make cluster (issue 32, docs/cluster.md) ------------------------------------------------
# The e2e tier's real single-node Kubernetes (kubeletcluster.py: kubelet, containerd, runc, CNI,
# kube-proxy, CoreDNS, the node/operator images imported) kept running in its own network
# namespace (MQ_CLUSTER_NETNS, default mq-cluster; state in MQ_CLUSTER_STATE, default
# /var/lib/metaquorum-cluster). Root. `make cluster-shell` enters it (CMD='...' runs a command).
MQ_CLUSTER := $(BIN)/python e2e/usercluster.py
.PHONY: cluster cluster-down cluster-status cluster-shell
# KIND=1: a kind cluster in Docker or Podman with the same images instead (e2e/userkind.py).
MQ_KIND := $(if $(filter 1,$(KIND)),--kind)
cluster: setup
	@$(MQ_CLUSTER) $(MQ_KIND) up
cluster-down: setup
	@$(MQ_CLUSTER) $(MQ_KIND) down
cluster-status: setup
	@$(MQ_CLUSTER) $(MQ_KIND) status
cluster-shell: setup
	@$(MQ_CLUSTER) $(MQ_KIND) shell $(CMD)
# README's quickstart block run verbatim against its own `make cluster`, then `make cluster-down`
# and the host checked clean (e2e/test_quickstart.py; about 4 min; make e2e runs it too).
.PHONY: quickstart
quickstart: setup
	$(PYTEST) -p no:cacheprovider e2e/test_quickstart.py

# The node and operator images as OCI archives in dist/ with digests and CycloneDX SBOMs
# (e2e/tools/dist_images.py; built by build-images.sh, cached by content; root), and the chart
# as a package (helm package; its image defaults are these images' name and tag).
.PHONY: images chart
images: setup
	@$(BIN)/python e2e/tools/dist_images.py
chart: setup
	@mkdir -p dist && "$$(e2e/tools/install-clients.sh)/helm" package charts/metaquorum -d dist
# --- end make cluster ---------------------------------------------------------------------------

clean:
	rm -rf $(VENV) $(TOOLS) .mypy_cache .ruff_cache .pytest_cache build/compiled build/compiled.tmp
