#!/usr/bin/env bash
# Builds lockchaos's own image (`make image`) without any registry pull:
# bin/lockchaos and its clock shim, every store's server (Redis with
# Sentinel, etcd, ZooKeeper, PostgreSQL) and the adapter toolchains (JDK and
# Maven, Node and npm, Python 3 and pip, Perl), all from this machine's
# installed Debian packages: the files dpkg lists for them and for every
# package they depend on, imported with `docker import`. The shipped
# adapters are built in a container of it (Maven, npm and pip fetch their
# pinned versions) into the image's folder, which is then imported again
# with them, so that an audit in the image needs no package registry for
# them.
#
#   docker/build-lockchaos-image.sh [TAG]    default tag lockchaos/lockchaos:local
#
# In the image lockchaos runs its servers as local processes, as on a
# machine (docs/containers.md#lockchaos-in-a-container):
#   docker run --rm --user "$(id -u):$(id -g)" -v "$PWD:/src" lockchaos/lockchaos:local audit --lock-file lock.yaml
set -euo pipefail
start=$(date +%s)

die() { echo "build-lockchaos-image: $*" >&2; exit 1; }

tag=${1:-lockchaos/lockchaos:local}
repo=$(cd "$(dirname "$0")/.." && pwd)
exe=$repo/bin/lockchaos
shim=$repo/bin/clockshim.so
[ -x "$exe" ] && [ -f "$shim" ] || die "$exe and $shim are not built: run make build (make image does it first)"
command -v dpkg-query >/dev/null 2>&1 || die "the image is made of this machine's Debian packages, and there is no dpkg here (Debian or Ubuntu)"
command -v docker >/dev/null 2>&1 || die "docker is not installed: run 'make setup' as root (installs docker.io)"
docker info >/dev/null 2>&1 || die "no Docker engine answers: run 'make setup' as root (starts dockerd), or start one"

# The packages: the stores' servers, the toolchains, tini (the container's
# init: it reaps what the servers leave and passes signals on), and the
# tools the toolchains' scripts call. The JDK is the one javac is from.
javac=$(command -v javac) || die "no JDK (javac): apt-get install -y default-jdk-headless (or 'make setup' as root)"
jdk=$(dpkg-query -S "$(readlink -f "$javac")" 2>/dev/null | cut -d: -f1) || die "javac ($javac) is from no Debian package"
stores=$("$exe" list --packages) || die "$exe list --packages failed"
roots="$jdk $stores maven nodejs npm python3 python3-pip perl
  ca-certificates ca-certificates-java tini bash dash coreutils debianutils findutils grep sed tar gzip libc-bin tzdata"

# closure PKG...: PKG and every installed package they depend on (Depends
# and Pre-Depends; of alternatives the first installed, for a virtual
# package a provider already taken, else the first). Zookeeper's package
# asks for the desktop JRE (GTK, Mesa: 300 MB); the headless one, which
# the JDK brings, runs it, so that one is left out.
closure() {
  dpkg-query -W -f='${db:Status-Abbrev}\t${Package}\t${Provides}\t${Pre-Depends}, ${Depends}\n' |
    awk -F'\t' -v roots="$*" -v skip='^(default-jre|openjdk-[0-9]+-jre)$' '
      function strip(s) { gsub(/\([^)]*\)/, "", s); gsub(/:[a-z0-9]+/, "", s); gsub(/[ \t]/, "", s); return s }
      function pick(group,   n, alt, i, a, k) {
        n = split(group, alt, "|")
        for (i = 1; i <= n; i++) { a = strip(alt[i]); if (a ~ skip) return "-"; if (a in inst) return a }
        for (i = 1; i <= n; i++) { a = strip(alt[i]); for (k = 1; k <= nprov[a]; k++) if (provs[a, k] in queued) return provs[a, k] }
        for (i = 1; i <= n; i++) { a = strip(alt[i]); if (nprov[a] > 0) return provs[a, 1] }
        return ""
      }
      $1 ~ /^ii/ && $2 !~ skip {
        inst[$2] = 1; deps[$2] = $4
        n = split($3, pv, ",")
        for (i = 1; i <= n; i++) { v = strip(pv[i]); if (v != "") provs[v, ++nprov[v]] = $2 }
      }
      END {
        nq = split(roots, q, " ")
        for (i = 1; i <= nq; i++) {
          p = pick(q[i])
          if (p == "") { missing = missing " " q[i]; continue }
          q[i] = p; queued[p] = 1
        }
        if (missing != "") { print "missing" missing; exit 1 }
        for (h = 1; h <= nq; h++) {
          p = q[h]; if (p == "-") continue
          print p
          m = split(deps[p], g, ",")
          for (j = 1; j <= m; j++) {
            if (strip(g[j]) == "") continue
            d = pick(g[j])
            if (d == "") { print "missing " strip(g[j]) " (for " p ")"; exit 1 }
            if (!(d in queued)) { q[++nq] = d; queued[d] = 1 }
          }
        }
      }'
}
pkgs=$(closure $roots) || die "not installed:${pkgs#missing}: apt-get install -y $stores default-jdk-headless maven nodejs npm python3 python3-pip tini (or 'make setup' as root)"

root=$(mktemp -d /tmp/lockchaos-image-XXXXXX)
base=$tag-adapters-build
cleanup() {
  docker image rm "$base" >/dev/null 2>&1 || true
  rm -rf "$root" "$root.files"
}
trap cleanup EXIT

# The packages' files, at their own paths (a merged /usr's /bin, /lib links
# first, as on this machine), without their documentation.
for d in bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$d" ]; then
    mkdir -p "$root$(readlink -f "/$d")"
    ln -s "$(readlink "/$d")" "$root/$d"
  fi
done
# shellcheck disable=SC2086
dpkg-query -L $pkgs 2>/dev/null | grep '^/' | grep -Ev '^/usr/share/(doc|man|info|lintian|locale)(/|$)' | sed 's#^/##' | sort -u >"$root.files"
# What maintainer scripts made and dpkg does not list: the alternatives
# (/usr/bin/java -> /etc/alternatives/java -> the JDK's), the CA bundle and
# Java's keystore, the name service switch.
{
  echo etc/nsswitch.conf
  find /usr -xdev -lname '/etc/alternatives/*' 2>/dev/null | sed 's#^/##'
} >>"$root.files"
tar -C / --no-recursion --ignore-failed-read -cf - -T "$root.files" 2>/dev/null |
  tar -C "$root" --keep-directory-symlink -xf -
tar -C / -cf - etc/alternatives etc/ssl/certs | tar -C "$root" --keep-directory-symlink -xf -
# npm as it is here: `npm install -g npm` replaces the package's own tree.
npm=$(readlink -f "$(command -v npm)")
npm=${npm%/bin/*}
if [ -f "$npm/package.json" ] && [ "${npm#/usr/}" != "$npm" ]; then
  rm -rf "${root:?}$npm"
  tar -C / -cf - "${npm#/}" | tar -C "$root" --keep-directory-symlink -xf -
fi
rm -f "$root.files"
copied=$(date +%s)
for f in /usr/bin/redis-server /usr/bin/redis-sentinel /usr/bin/etcd /usr/share/java/zookeeper.jar /usr/bin/java /usr/bin/javac /usr/bin/mvn /usr/bin/node /usr/bin/npm /usr/bin/python3 /usr/bin/perl /usr/bin/tini /bin/sh; do
  [ -e "$root$f" ] || die "$f is missing from the image's files"
done

# lockchaos beside its clock shim, where it looks for it first.
mkdir -p "$root"/opt/lockchaos/bin "$root"/src "$root"/root
install -m 0755 "$exe" "$root"/opt/lockchaos/bin/lockchaos
install -m 0755 "$shim" "$root"/opt/lockchaos/bin/clockshim.so
ln -s /opt/lockchaos/bin/lockchaos "$root"/usr/bin/lockchaos
mkdir -p -m 1777 "$root"/tmp "$root"/home/lockchaos
chmod 1777 "$root"/tmp "$root"/home/lockchaos

# Users: root, and postgres, whom lockchaos runs PostgreSQL as when it runs
# as root (PostgreSQL refuses root). Anyone else (docker run --user, so
# that what the run writes in a mounted folder is the caller's) is added by
# the entrypoint: initdb refuses a user with no name. HOME is the same
# writable folder for all.
cat >"$root"/etc/passwd <<'PASSWD'
root:x:0:0:root:/root:/bin/bash
postgres:x:101:101:PostgreSQL:/var/lib/postgresql:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
PASSWD
cat >"$root"/etc/group <<'GROUP'
root:x:0:
postgres:x:101:
nogroup:x:65534:
GROUP
chmod 0666 "$root"/etc/passwd
cat >"$root"/opt/lockchaos/bin/entrypoint <<'ENTRYPOINT'
#!/bin/sh
# The image's entrypoint, under tini: names the user if /etc/passwd does not
# (docker run --user), then runs lockchaos.
if ! id -un >/dev/null 2>&1; then
  echo "lockchaos:x:$(id -u):$(id -g):lockchaos:$HOME:/bin/sh" >>/etc/passwd
fi
exec lockchaos "$@"
ENTRYPOINT
chmod 0755 "$root"/opt/lockchaos/bin/entrypoint
ldconfig -r "$root" 2>/dev/null || true

# Labels: the binary's version, and the commit it was built from (with
# +dirty when the checkout had changes), by which a test reuses an image.
version=$("$exe" version 2>/dev/null | awk 'NR == 1 { print $2 }')
commit=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo none)
[ -z "$(git -C "$repo" status --porcelain 2>/dev/null)" ] || commit="$commit+dirty"
# Node trusts the system's certificate authorities, as Java, Maven and pip
# do (this machine's, copied above).
settings=(
  --change 'ENV PATH=/opt/lockchaos/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  --change 'ENV HOME=/home/lockchaos'
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt'
)

# The shipped adapters, built as their first use would build them, into
# HOME's cache, by a container of the image without them whose HOME is the
# image's folder; the package managers' own caches are dropped after. Not
# `docker commit`: a layer it makes keeps whole seconds of the files'
# times, and so the build keys the builds were recorded by would change.
# The cache's folders are then open to every user (docker run --user): a
# build of the user's own adapter, its check's record and the build lock
# go there.
tar -C "$root" --numeric-owner -c . | docker import "${settings[@]}" - "$base" >/dev/null
docker run --rm --network host --user "$(id -u):$(id -g)" -v "$root/home/lockchaos:/home/lockchaos" \
  --entrypoint /bin/sh "$base" -c '
  set -e
  lockchaos adapter build
  rm -rf "$HOME/.m2" "$HOME/.npm" "$HOME/.cache/pip"
  find "$HOME" -type d -exec chmod a+rwx {} +
  chmod a+rw "$HOME/.cache/lockchaos/adapter-build.lock"
' || die "the shipped adapters did not build in the image (above)"
docker image rm "$base" >/dev/null
# The hazelcast store's members run Hazelcast's jar from the local Maven
# repository (stores/hazelcast): this machine's, which make setup fetched.
hz=repository/com/hazelcast/hazelcast
[ -d "$HOME/.m2/$hz" ] || die "Hazelcast's jar is not in $HOME/.m2/$hz: run 'make setup' (it fetches it)"
mkdir -p "$root/home/lockchaos/.m2/$hz"
cp -r "$HOME/.m2/$hz/." "$root/home/lockchaos/.m2/$hz/"
chmod -R a+rwX "$root/home/lockchaos/.m2"
# The nats store's server, which the store builds from the Go module proxy
# into lockchaos's cache on first use (stores/nats/server.go), as it would:
# the image has no Go to build it.
nats=$(sed -n 's/^const ServerVersion = "\(v[^"]*\)"$/\1/p' "$repo/stores/nats/server.go")
[ -n "$nats" ] || die "no ServerVersion in stores/nats/server.go"
natsdir="$root/home/lockchaos/.cache/lockchaos/nats-server-$nats"
mkdir -p "$natsdir"
GOBIN="$natsdir" GOFLAGS= CGO_ENABLED=0 go install -trimpath "github.com/nats-io/nats-server/v2@$nats" \
  || die "could not build nats-server $nats from the Go module proxy"
chmod -R a+rX "$natsdir"
built=$(date +%s)

# The image: POSIX tar keeps the files' times to the nanosecond.
old=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
tar -C "$root" --numeric-owner --format=posix -c . | docker import "${settings[@]}" \
  --change 'ENTRYPOINT ["tini", "--", "/opt/lockchaos/bin/entrypoint"]' \
  --change 'CMD ["help"]' \
  --change 'WORKDIR /src' \
  --change "LABEL io.lockchaos.version=$version io.lockchaos.commit=$commit io.lockchaos.built-from=debian-packages" \
  --message "lockchaos $version with its stores and toolchains, from this host's Debian packages" \
  - "$tag" >/dev/null

# The image must work on its own: every server and toolchain starts, and
# every shipped adapter is built (with no network, a build would fail).
docker run --rm --network none --entrypoint /bin/sh "$tag" -c '
  set -e
  redis-server --version; redis-sentinel --version >/dev/null; etcd --version | head -n 1
  /usr/lib/postgresql/*/bin/postgres --version
  java -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar org.apache.zookeeper.version.VersionInfoMain
  java -version 2>&1 | head -n 1; mvn -v | head -n 1; echo "node $(node --version), npm $(npm --version)"
  python3 -m pip --version; perl -e "print qq(perl \$^V\n)"
  lockchaos adapter build | grep -v -e "up to date" -e "nothing to build" && exit 1 || true
' || die "the new image $tag does not work (above)"
new=$(docker image inspect --format '{{.Id}}' "$tag")
if [ -n "$old" ] && [ "$old" != "$new" ]; then
  docker image rm "$old" >/dev/null 2>&1 || true
fi
size=$(docker image inspect --format '{{.Size}}' "$tag")
echo "built $tag, lockchaos $version: $((size / 1000000)) MB, in $(($(date +%s) - start)) s (the adapters $((built - copied)) s)"
