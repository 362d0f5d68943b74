# The docker backend's image of the NATS store (lockchaos/nats:local),
# sourced by docker/build-image.sh --store nats (make store-images): a shell
# only. The nats-server a member runs is the one the local backend runs,
# which the store builds into lockchaos's cache (server.go) and mounts
# read-only into the member's container at the path it has here: any
# release --server-version asks for, without a new image.
version=$(sed -n 's/^const ServerVersion = "\(v[^"]*\)"$/\1/p' "$(dirname "$0")/../stores/nats/server.go")
[ -n "$version" ] || die "no ServerVersion in stores/nats/server.go"
add_shell
cmd='["/bin/sh"]'
check=(/bin/sh -c "echo nats-server $version, mounted from the cache of lockchaos")
