# The docker backend's image of the MariaDB store (lockchaos/mariadb:local),
# sourced by docker/build-image.sh --store mariadb (make store-images): the
# server from this machine's mariadb-server package, its messages and
# character sets (/usr/share/mysql), and a shell.
server=/usr/sbin/mariadbd
[ -x "$server" ] || die "mariadbd is not installed: apt-get install -y mariadb-server (or 'make setup' as root)"
version=$("$server" --version | awk '{ print $3 }')
mkdir -p "$root/usr/sbin"
install -m 0755 "$server" "$root$server"
copy_tree /usr/share/mysql
with_libs "$server"
add_shell
cmd="[\"$server\"]"
check=("$server" --version)
