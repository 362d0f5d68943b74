#!/usr/bin/env bash
# Makes the docker backend usable on this machine, for `make setup`:
#   1. a Docker engine that answers: when none does and we are root on Debian,
#      install docker.io and start dockerd (once: never a second daemon);
#   2. the default image (lockchaos/redis:local) and the images of the other
#      stores (lockchaos/etcd:local, lockchaos/zookeeper:local,
#      lockchaos/postgres:local), each built by build-image.sh from the
#      installed packages when it is missing.
# When it cannot do that (not root, no apt-get, dockerd cannot run here) it
# says what to do and exits 0: `make chaos` runs on local processes and does
# not need Docker, and the docker tests then fail with the same advice.
set -euo pipefail
cd "$(dirname "$0")"
image=${1:-lockchaos/redis:local}

warn() { echo "setup: $*" >&2; }

engine_answers() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

wait_for_engine() {
  for _ in $(seq 1 60); do
    engine_answers && return 0
    sleep 0.5
  done
  return 1
}

if ! engine_answers; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    info=$(docker info 2>&1 || true)
    if command -v docker >/dev/null 2>&1 && grep -qi 'permission denied.*docker' <<<"$info"; then
      warn "a Docker engine runs, but you may not use it, so the docker backend and its tests cannot run."
      warn "  join its group and log in again:  sudo usermod -aG docker $(id -un)"
    else
      sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo "
      warn "no Docker engine answers, so the docker backend and its tests cannot run. Install and start one:"
      warn "  ${sudo}apt-get install -y docker.io && ${sudo}systemctl start docker  (no systemd: ${sudo}dockerd >/tmp/dockerd.log 2>&1 &)"
    fi
    exit 0
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    echo "installing docker.io (Debian package, for the docker backend)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
  fi
  # The package's service may have started a daemon already; never start a second one.
  pid=$(pgrep -x dockerd | head -n 1 || true)
  if [ -z "$pid" ]; then
    echo "starting dockerd (log: /tmp/dockerd.log)"
    setsid dockerd >/tmp/dockerd.log 2>&1 </dev/null &
  else
    echo "dockerd is running (pid $pid); waiting for it to answer"
  fi
  if ! wait_for_engine; then
    warn "dockerd does not answer after 30 s, so the docker backend and its tests cannot run here"
    warn "  (it usually needs privileges this environment lacks). Last lines of /tmp/dockerd.log:"
    tail -n 5 /tmp/dockerd.log >&2 || true
    exit 0
  fi
fi
docker version --format 'docker engine {{.Server.Version}} (API {{.Server.APIVersion}})'

if docker image inspect "$image" >/dev/null 2>&1; then
  echo "image $image is present"
else
  ./build-image.sh "$image"
fi
# The stores in folders of their own (stores/NAME) that say how to make
# their image (stores/NAME/image.sh), beside the first three.
for store in etcd zookeeper postgres $(cd .. && ls stores/*/image.sh 2>/dev/null | cut -d/ -f2); do
  if docker image inspect "lockchaos/$store:local" >/dev/null 2>&1; then
    echo "image lockchaos/$store:local is present"
  else
    ./build-image.sh --store "$store"
  fi
done
