# The docker backend's image of the NATS store (lockchaos/nats:local),
# sourced by docker/build-image.sh --store nats (make store-images): the
# server from this machine's nats-server package, and a shell.
server=$(command -v nats-server || echo /usr/sbin/nats-server)
[ -x "$server" ] || die "nats-server is not installed: apt-get install -y nats-server (or 'make setup' as root)"
server=$(readlink -f "$server")
version=$("$server" --version | sed 's/^nats-server: v//')
mkdir -p "$root$(dirname "$server")"
install -m 0755 "$server" "$root$server"
with_libs "$server"
add_shell
cmd="[\"$server\"]"
check=("$server" --version)
