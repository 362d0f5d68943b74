# The docker backend's image of the Hazelcast store (lockchaos/hazelcast:local),
# sourced by docker/build-image.sh --store hazelcast (make store-images): this
# machine's JVM and Hazelcast's jar from the local Maven repository, at the
# paths they have here (the member's command names them), and a shell. The
# jar is fetched first when it is not there. Its version is hazelcast.go's
# Version (a test checks that they agree).
version=5.4.0
java=$(command -v java) || die "java is not installed: apt-get install -y default-jdk-headless (or 'make setup' as root)"
java=$(readlink -f "$java")
jvm=$(dirname "$(dirname "$java")")
jar="$HOME/.m2/repository/com/hazelcast/hazelcast/$version/hazelcast-$version.jar"
if [ ! -f "$jar" ]; then
  command -v mvn >/dev/null 2>&1 || die "Hazelcast's jar is not in the local Maven repository ($jar), and Maven is not installed to fetch it: apt-get install -y maven"
  mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.8.1:get -Dartifact=com.hazelcast:hazelcast:$version -Dtransitive=false \
    || die "could not fetch Hazelcast $version from Maven Central"
fi
copy_tree "$jvm" "$(dirname "$jar")"
with_libs $(elfs "$jvm")
add_shell
cmd="[\"$java\"]"
check=(/bin/sh -c "test -f $jar && exec $java -version")
