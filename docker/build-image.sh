#!/usr/bin/env bash
# Builds the docker backend's default image from the redis-server installed on
# this machine, without any registry: a root filesystem holding redis-server
# (also redis-sentinel, redis-check-aof, redis-check-rdb: one binary that looks at
# argv[0]), redis-cli, the libraries `ldd` lists and a minimal /etc, imported
# with `docker import`.
#
#   docker/build-image.sh [TAG]     (default lockchaos/redis:local; `make image`)
set -euo pipefail
tag=${1:-lockchaos/redis:local}

die() { echo "build-image: $*" >&2; exit 1; }

command -v docker >/dev/null 2>&1 || die "docker is not installed: run 'make setup' as root (installs docker.io)"
docker info >/dev/null 2>&1 || die "no Docker engine answers: run 'make setup' as root (starts dockerd), or start one"
server=$(command -v redis-server) || die "redis-server is not installed: apt-get install -y redis-server (or 'make setup' as root)"
cli=$(command -v redis-cli) || die "redis-cli is not installed: apt-get install -y redis-tools (or 'make setup' as root)"
# Ask under its own name: the real file is redis-check-rdb, which reads argv[0].
version=$("$server" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
server=$(readlink -f "$server")
cli=$(readlink -f "$cli")

root=$(mktemp -d /tmp/lockchaos-image-XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/usr/bin "$root"/etc "$root"/data
mkdir -m 1777 "$root"/tmp

install -m 0755 "$server" "$root"/usr/bin/redis-server
install -m 0755 "$cli" "$root"/usr/bin/redis-cli
for name in redis-sentinel redis-check-aof redis-check-rdb; do
  ln -s redis-server "$root/usr/bin/$name"
done

# Every library either binary needs, at the path ldd resolved it to, plus the
# ELF interpreter; -L copies the file a soname link points to under the
# soname's own name.
for lib in $( { ldd "$server"; ldd "$cli"; } | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u); do
  cp -L --parents "$lib" "$root"
done
# An ld.so cache for the copied libraries, so that the loader finds them
# wherever the host's layout put them.
if command -v ldconfig >/dev/null 2>&1; then
  printf '%s\n' $(cd "$root" && find . -name '*.so*' -printf '/%h\n' | sed 's#^/\./#/#' | sort -u) >"$root"/etc/ld.so.conf
  ldconfig -r "$root" 2>/dev/null || true
fi

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
  --change 'CMD ["redis-server"]' \
  --change "LABEL io.lockchaos.redis-version=$version io.lockchaos.built-from=debian-redis-server" \
  --message "lockchaos: redis-server $version from this host's Debian package" \
  - "$tag" >/dev/null

# The image must start on its own: a missing library shows up here, not in a run.
got=$(docker run --rm --network none "$tag" redis-server --version) || die "the new image $tag does not start redis-server (see above)"
# A rebuild leaves the previous image untagged: drop it unless a container uses it.
new=$(docker image inspect --format '{{.Id}}' "$tag")
if [ -n "$old" ] && [ "$old" != "$new" ]; then
  docker image rm "$old" >/dev/null 2>&1 || true
fi
echo "built $tag: $got"
