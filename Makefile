# lockchaos — see README.md.
#   make chaos   the main job: the scenario catalogue on local redis-server processes
#   make test    vet and every test (unit, property, integration against real Redis)
#   make setup   install what the two need (redis-server), as root, when missing

GO      ?= go
BIN     := bin/lockchaos
export PATH := $(PATH):/usr/local/go/bin

.PHONY: all build setup test chaos chaos-quick vet clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/lockchaos

# setup installs Debian's redis-server when it is missing and we are root;
# otherwise it says what to install.
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

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: the files above need formatting" >&2; exit 1; }

test: setup vet
	$(GO) test -count=1 -timeout 15m ./...

chaos: setup build
	./$(BIN) chaos

chaos-quick: setup build
	./$(BIN) chaos --quick

clean:
	rm -rf bin
