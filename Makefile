# lockchaos — see README.md.
#   make chaos   the main job: the scenario catalogue on local redis-server processes
#   make test    vet and every test (unit, property, integration against real Redis);
#                it fails if the tests changed the checkout
#   make setup   install what the two need (redis, gcc, chromium, docker), as root, when missing

GO      ?= go
BIN     := bin/lockchaos
BUILD   := -buildvcs=auto
# -trimpath for every go command here (build, vet, test): a package is
# known in the build cache by its module and version, not by the folder it
# was compiled in, so the tests, the binary and the README's install line
# (go install …@latest, which the slow tests run in an empty GOPATH) share
# one compile of each dependency.
export GOFLAGS ?= -trimpath
# TEST_P: how many test packages run at once, two per core. Their tests
# mostly wait on real servers, faults and timers, so one package per core
# (go test's default) leaves a core idle: make test at rest on two cores
# took 550 s with -p 2 and 420 s with -p 4 (2026-12-01, fresh clones, one
# after the other), and passes beside one CPU hog per core either way.
TEST_P  ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) * 2 )))
# IMAGE is lockchaos's own image (make image); REDIS_IMAGE the docker
# backend's default image, built from this host's redis-server (make store-images).
IMAGE   ?= lockchaos/lockchaos:local
REDIS_IMAGE ?= lockchaos/redis:local
export PATH := $(PATH):/usr/local/go/bin

.PHONY: all build install shim setup adapters image store-images test chaos chaos-quick bench vet docs screenshots clean

all: build

build: shim
	$(GO) build $(BUILD) -o $(BIN) ./cmd/lockchaos

# install puts lockchaos in $(go env GOBIN) (or GOPATH/bin), on your PATH;
# it builds its clock shim itself on first use.
install:
	$(GO) install $(BUILD) ./cmd/lockchaos

# shim builds the clock faults' LD_PRELOAD library (cluster/clockshim) with the
# system C compiler; the clock nemeses find it beside the binary, in bin/.
# Without it (an installed binary) lockchaos compiles the same source with the
# same flags (shimCFlags in cluster/clock.go) into ~/.cache/lockchaos itself.
SHIM    := bin/clockshim.so
shim: $(SHIM)
$(SHIM): cluster/clockshim/clockshim.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -fPIC -shared -Wall -Wextra -o $@ $<

# setup installs, as root with apt-get, the Debian packages that are missing:
# every store's servers, as the store declares them (`lockchaos list
# --packages`: redis-server, redis-sentinel, etcd-server, zookeeper,
# postgresql…; lockchaos starts its own servers on free ports, so the
# services the packages start by themselves are stopped and disabled when
# setup installed them), gcc (the clock shim, make shim), chromium (the HTML
# report's browser test), and tmux, zsh and fish (the shell completion's test
# types into a real bash, zsh and fish). It builds lockchaos first, to ask it.
# Otherwise (not root, or no apt-get) it prints the one command that installs
# them and fails, until they are there; with everything installed it needs no
# root. Without chromium only that test fails, and setup goes on.
setup:
	@$(GO) build $(BUILD) -o $(BIN) ./cmd/lockchaos
	@need="$$(./$(BIN) list --packages --missing)"; need="$${need:+ $$need}"; services="$$(./$(BIN) list --services --missing)"; want=""; \
	command -v $(firstword $(CC)) >/dev/null 2>&1 || need="$$need gcc"; \
	command -v chromium >/dev/null 2>&1 || want=" chromium"; \
	command -v java >/dev/null 2>&1 || want="$$want default-jdk-headless"; \
	command -v mvn >/dev/null 2>&1 || want="$$want maven"; \
	command -v node >/dev/null 2>&1 || want="$$want nodejs"; \
	command -v npm >/dev/null 2>&1 || want="$$want npm"; \
	command -v python3 >/dev/null 2>&1 || want="$$want python3 python3-pip"; \
	command -v tmux >/dev/null 2>&1 || want="$$want tmux"; \
	command -v zsh >/dev/null 2>&1 || want="$$want zsh"; \
	command -v fish >/dev/null 2>&1 || want="$$want fish"; \
	if [ -n "$$need$$want" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing$$need$$want (Debian packages)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$need $$want >/dev/null; \
	    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then \
	      for svc in $$services; do systemctl disable --now $$svc >/dev/null 2>&1 || true; done; \
	    fi; \
	  else \
	    if [ "$$(id -u)" = 0 ]; then sudo=""; else sudo="sudo "; fi; \
	    cmd="$${sudo}apt-get update && $${sudo}apt-get install -y$$need$$want"; \
	    if [ -n "$$need" ]; then \
	      echo "setup: missing$$need$$want. Install with (Debian/Ubuntu; elsewhere the same packages), then run make again:" >&2; \
	      echo "  $$cmd" >&2; \
	      exit 1; \
	    fi; \
	    echo "setup: missing$$want (chromium: the HTML report's browser test; the JDK, Maven, Node, npm and Python: the adapter locks of those languages, whose rows are then skipped and counted). Install with:" >&2; \
	    echo "  $$cmd" >&2; \
	  fi; \
	fi
	@redis-server --version | head -1
	@# Docker for the docker backend (--backend docker) and its tests: docker.io
	@# and dockerd when no engine answers and we are root, then $(REDIS_IMAGE)
	@# and the other stores' images unless present.
	@docker/setup.sh $(REDIS_IMAGE)
	@# The adapter locks of other languages (adapters/), each with its own
	@# package manager at the versions its manifest files pin.
	@$(MAKE) --no-print-directory adapters

# adapters builds the shipped adapter locks (adapters/LANGUAGE/LIBRARY):
# Maven, npm and pip, at pinned versions. One whose toolchain is missing is
# skipped, and said so; make chaos then counts its rows as not run. One
# whose folder did not change since its last build here is not built again.
adapters: build
	./$(BIN) adapter build

# image (re)builds lockchaos's own image, $(IMAGE): the binary, every
# store's server and the adapter toolchains from this machine's Debian
# packages (no registry pull), the shipped adapters built in it (Maven, npm
# and pip fetch their pinned versions). docs/containers.md says how to run it.
image: build
	docker/build-lockchaos-image.sh $(IMAGE)

# store-images (re)builds the docker backend's images from the installed
# packages, no registry needed: $(REDIS_IMAGE) (redis-server, redis-sentinel,
# redis-cli), lockchaos/etcd:local, lockchaos/zookeeper:local and
# lockchaos/postgres:local.
store-images:
	docker/build-image.sh $(REDIS_IMAGE)
	for s in etcd zookeeper postgres $$(ls stores/*/image.sh 2>/dev/null | cut -d/ -f2); do docker/build-image.sh --store $$s || exit 1; done

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: the files above need formatting" >&2; exit 1; }
	@# -e: a test-only dependency of redsync cannot be fetched from the proxy.
	@$(GO) mod tidy -e -diff >/dev/null 2>&1 || { $(GO) mod tidy -e -diff; echo "go.mod/go.sum are not tidy: run go mod tidy -e" >&2; exit 1; }

# docs regenerates docs/OPTIONS.md from the options the locks and nemeses
# declare (a test fails when it is stale).
docs:
	$(GO) run ./cmd/lockchaos list --markdown > docs/OPTIONS.md
	$(GO) run ./cmd/lockchaos list --schema > docs/scenario.schema.json

# screenshots retakes the screenshots README.md and docs/report.md show
# (docs/report-*.png) in the browser tests that check those pages; a plain
# test run leaves them in its temporary folders (needs chromium and redis).
screenshots: shim
	LOCKCHAOS_DOCS_SCREENSHOTS=1 $(GO) test -count=1 -run '^(TestRunPageLanesInBrowser|TestReadmeQuickstartRunsAsWritten)$$' ./report ./cli

# test fails when the tests changed the checkout: they write to temporary
# folders, never to tracked files (git status before and after, and the
# content of every change, must be the same).
test: setup shim vet
	@before=$$(git status --porcelain -uall 2>/dev/null; git diff HEAD 2>/dev/null | cksum); \
	echo "$(GO) test -count=1 -p $(TEST_P) -timeout 15m ./..."; \
	$(GO) test -count=1 -p $(TEST_P) -timeout 15m ./... || exit $$?; \
	after=$$(git status --porcelain -uall 2>/dev/null; git diff HEAD 2>/dev/null | cksum); \
	if [ "$$before" != "$$after" ]; then \
	  echo "make test: the tests changed the checkout (or it was edited meanwhile):" >&2; git status --short >&2; exit 1; \
	fi

chaos: setup build
	./$(BIN) chaos $(CHAOS_FLAGS)

# bench measures the harness and the checker (minutes; never part of test):
# results/bench/<date>.json and .md. BENCH_FLAGS=--quick for a shorter run.
bench: setup build
	$(GO) build -o bin/lockchaos-bench ./cmd/lockchaos-bench
	./bin/lockchaos-bench --lockchaos ./$(BIN) $(BENCH_FLAGS)

chaos-quick: setup build
	./$(BIN) chaos --quick

clean:
	rm -rf bin
