#!/usr/bin/env bash
# Builds the docker backend's images from the servers installed on this
# machine, without any registry: a root filesystem holding the server, the
# libraries `ldd` lists and a minimal /etc, imported with `docker import`.
# (lockchaos's own image, with every store and toolchain in one:
# build-lockchaos-image.sh, `make image`.)
#
#   docker/build-image.sh [TAG]            Redis: redis-server (also
#       redis-sentinel, redis-check-aof, redis-check-rdb: one binary that looks
#       at argv[0]) and redis-cli; default tag lockchaos/redis:local (`make store-images`)
#   docker/build-image.sh --store NAME     etcd, zookeeper or postgres: the
#       store's server at the path the package installed it to, and /bin/sh;
#       tag lockchaos/NAME:local (`make store-images`)
set -euo pipefail

die() { echo "build-image: $*" >&2; exit 1; }

store=redis
if [ "${1:-}" = --store ]; then
  store=${2:-}
  [ -n "$store" ] || die "--store needs a name: etcd, zookeeper or postgres"
  shift 2
fi
tag=${1:-lockchaos/$store:local}

command -v docker >/dev/null 2>&1 || die "docker is not installed: run 'make setup' as root (installs docker.io)"
docker info >/dev/null 2>&1 || die "no Docker engine answers: run 'make setup' as root (starts dockerd), or start one"

root=$(mktemp -d /tmp/lockchaos-image-XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/usr/bin "$root"/bin "$root"/etc "$root"/data
mkdir -m 1777 "$root"/tmp

# with_libs FILE...: every library the files need, at the path ldd resolved it
# to, plus the ELF interpreter; -L copies the file a soname link points to
# under the soname's own name. Files that are not dynamic ELF add nothing.
with_libs() {
  local f lib
  for f in "$@"; do
    { ldd "$f" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
  done | sort -u | while read -r lib; do
    [ -e "$root$lib" ] || cp -L --parents "$lib" "$root"
  done
}

# copy_tree DIR...: the directories at their own paths, symbolic links
# followed (Debian's JDK links its configuration into /etc); a dangling link
# (the JDK's src.zip without its source package) is left out.
copy_tree() {
  local d
  for d in "$@"; do
    { tar -C / --dereference --ignore-failed-read -cf - "${d#/}" 2>/dev/null || true; } | tar -C "$root" -xf -
    [ -e "$root$d" ] || die "could not copy $d into the image"
  done
}

# elfs DIR: the regular files under DIR that are ELF objects.
elfs() { find "$1" -type f \( -name '*.so*' -o -perm -u+x \) -exec sh -c 'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \; ; }

# A shell for the store images: a member's server is started as
# `sh -c 'exec server … >>log 2>&1'`, so that it is the container's main
# process and writes its log where the local backend's does.
add_shell() {
  local sh
  sh=$(readlink -f /bin/sh)
  install -m 0755 "$sh" "$root"/bin/sh
  with_libs "$sh"
}

case "$store" in
redis)
  server=$(command -v redis-server) || die "redis-server is not installed: apt-get install -y redis-server (or 'make setup' as root)"
  cli=$(command -v redis-cli) || die "redis-cli is not installed: apt-get install -y redis-tools (or 'make setup' as root)"
  # Ask under its own name: the real file is redis-check-rdb, which reads argv[0].
  version=$("$server" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
  server=$(readlink -f "$server")
  cli=$(readlink -f "$cli")
  install -m 0755 "$server" "$root"/usr/bin/redis-server
  install -m 0755 "$cli" "$root"/usr/bin/redis-cli
  for name in redis-sentinel redis-check-aof redis-check-rdb; do
    ln -s redis-server "$root/usr/bin/$name"
  done
  with_libs "$server" "$cli"
  cmd='["redis-server"]'
  check=(redis-server --version)
  ;;
etcd)
  server=$(command -v etcd) || die "etcd is not installed: apt-get install -y etcd-server (or 'make setup' as root)"
  server=$(readlink -f "$server")
  version=$("$server" --version | sed -n 's/^etcd Version: //p')
  mkdir -p "$root$(dirname "$server")"
  install -m 0755 "$server" "$root$server"
  with_libs "$server"
  add_shell
  cmd="[\"$server\"]"
  check=("$server" --version)
  ;;
zookeeper)
  java=$(command -v java) || die "java is not installed: apt-get install -y zookeeper (or 'make setup' as root)"
  [ -f /usr/share/java/zookeeper.jar ] || die "/usr/share/java/zookeeper.jar is missing: apt-get install -y zookeeper (or 'make setup' as root)"
  java=$(readlink -f "$java")
  jvm=$(dirname "$(dirname "$java")")
  version=$(dpkg-query -W -f '${Version}' zookeeper 2>/dev/null || echo unknown)
  # The JVM and the jars the server's manifest names (all in /usr/share/java).
  copy_tree "$jvm" /usr/share/java
  with_libs $(elfs "$jvm")
  add_shell
  cmd="[\"$java\"]"
  check=("$java" -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar org.apache.zookeeper.version.VersionInfoMain)
  ;;
postgres)
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$bin" ] && [ -x "$bin/postgres" ] || die "PostgreSQL is not installed: apt-get install -y postgresql (or 'make setup' as root)"
  top=$(dirname "$bin")
  major=$(basename "$top")
  version=$("$bin/postgres" --version | awk '{ print $3 }')
  # The server, its modules, its share directory and the time zones it reads.
  copy_tree "$top" "/usr/share/postgresql/$major"
  [ -d /usr/share/zoneinfo ] && copy_tree /usr/share/zoneinfo
  with_libs $(elfs "$top")
  add_shell
  cmd="[\"$bin/postgres\"]"
  check=("$bin/postgres" --version)
  ;;
*)
  # A store in a folder of its own says how its server goes into an image:
  # stores/NAME/image.sh, sourced here, sets version, cmd and check as the
  # cases above do, with with_libs, copy_tree, elfs and add_shell.
  recipe="$(dirname "$0")/../stores/$store/image.sh"
  [ -f "$recipe" ] || die "unknown store '$store': redis (no --store), etcd, zookeeper, postgres, or a store whose folder has an image.sh (stores/$store/image.sh is missing)"
  # shellcheck source=/dev/null
  . "$recipe"
  ;;
esac

# An ld.so cache for the copied libraries, so that the loader finds them
# wherever the host's layout put them.
if command -v ldconfig >/dev/null 2>&1; then
  printf '%s\n' $(cd "$root" && find . -name '*.so*' -printf '/%h\n' | sed 's#^/\./#/#' | sort -u) >"$root"/etc/ld.so.conf
  ldconfig -r "$root" 2>/dev/null || true
fi

# Store members run as the coordinator's user (or postgres), with the host's
# /etc/passwd and /etc/group mounted over these.
cat >"$root"/etc/passwd <<'PASSWD'
root:x:0:0:root:/root:/usr/sbin/nologin
redis:x:999:999:redis:/data:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
PASSWD
cat >"$root"/etc/group <<'GROUP'
root:x:0:
redis:x:999:
nogroup:x:65534:
GROUP

old=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
tar -C "$root" --numeric-owner -c . | docker import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  --change 'WORKDIR /data' \
  --change "CMD $cmd" \
  --change "LABEL io.lockchaos.store=$store io.lockchaos.$store-version=$version io.lockchaos.built-from=debian-packages" \
  --message "lockchaos: $store $version from this host's Debian packages" \
  - "$tag" >/dev/null

# The image must start on its own: a missing library shows up here, not in a run.
got=$(docker run --rm --network none "$tag" "${check[@]}" 2>&1) || die "the new image $tag does not start ${check[0]}: $got"
# A rebuild leaves the previous image untagged: drop it unless a container uses it.
new=$(docker image inspect --format '{{.Id}}' "$tag")
if [ -n "$old" ] && [ "$old" != "$new" ]; then
  docker image rm "$old" >/dev/null 2>&1 || true
fi
echo "built $tag: $(head -n 1 <<<"$got")"
