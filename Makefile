# lockchaos — see README.md.
#   make chaos   the main job: the scenario catalogue on local redis-server processes
#   make test    vet and every test (unit, property, integration against real Redis)
#   make setup   install what the two need (redis-server, chromium), as root, when missing

GO      ?= go
BIN     := bin/lockchaos
# IMAGE is the docker backend's default image, built from this host's redis-server.
IMAGE   ?= lockchaos/redis:local
export PATH := $(PATH):/usr/local/go/bin

.PHONY: all build shim setup image test chaos chaos-quick bench vet clean

all: build

build: shim
	$(GO) build -o $(BIN) ./cmd/lockchaos

# shim builds the clock faults' LD_PRELOAD library (cluster/clockshim) with the
# system C compiler; the clock nemeses find it beside the binary, in bin/.
SHIM    := bin/clockshim.so
shim: $(SHIM)
$(SHIM): cluster/clockshim/clockshim.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -fPIC -shared -Wall -Wextra -o $@ $<

# setup installs Debian's redis-server and chromium when they are missing and
# we are root; otherwise it says what to install.
setup:
	@if ! command -v redis-server >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing redis-server (Debian package)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; \
	  else \
	    echo "redis-server is missing: install it with 'sudo apt-get install -y redis-server' (Debian/Ubuntu) and run make again" >&2; \
	    exit 1; \
	  fi; \
	fi
	@redis-server --version | head -1
	@# redis-sentinel for failover-sentinel; gcc builds the clock shim (make shim).
	@missing=""; \
	command -v redis-sentinel >/dev/null 2>&1 || missing="$$missing redis-sentinel"; \
	command -v gcc >/dev/null 2>&1 || missing="$$missing gcc"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing$$missing (Debian packages)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "missing:$$missing; install with 'sudo apt-get install -y$$missing' (failover-sentinel needs redis-sentinel, make shim needs gcc)" >&2; \
	    exit 1; \
	  fi; \
	fi
	@# chromium renders the HTML reports in report/'s browser test.
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (Debian package, for the HTML report test)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "chromium is missing (the HTML report test needs it): install it with 'sudo apt-get install -y chromium'" >&2; \
	  fi; \
	fi
	@# Docker for the docker backend (--backend docker) and its tests: docker.io
	@# and dockerd when no engine answers and we are root, then $(IMAGE) unless present.
	@docker/setup.sh $(IMAGE)

# image (re)builds $(IMAGE) from the installed redis-server: no registry needed.
image:
	docker/build-image.sh $(IMAGE)

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: the files above need formatting" >&2; exit 1; }

test: setup shim vet
	$(GO) test -count=1 -timeout 15m ./...

chaos: setup build
	./$(BIN) chaos

# bench measures the harness and the checker (minutes; never part of test):
# results/bench/<date>.json and .md. BENCH_FLAGS=--quick for a shorter run.
bench: setup build
	$(GO) build -o bin/lockchaos-bench ./cmd/lockchaos-bench
	./bin/lockchaos-bench --lockchaos ./$(BIN) $(BENCH_FLAGS)

chaos-quick: setup build
	./$(BIN) chaos --quick

clean:
	rm -rf bin
