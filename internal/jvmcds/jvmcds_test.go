package jvmcds

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// helloJar builds a jar of one class that prints "hello" to standard
// output, with the JDK's javac and jar; it skips without them.
func helloJar(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"java", "javac", "jar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: a JDK is needed", tool)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "Hello.java")
	if err := os.WriteFile(src, []byte(`public class Hello { public static void main(String[] a) { System.out.println("hello"); } }`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"javac", "-d", dir, src}, {"jar", "cf", filepath.Join(dir, "hello.jar"), "-C", dir, "Hello.class"}} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	return filepath.Join(dir, "hello.jar")
}

// A JVM that exits normally writes the archive; the next JVM maps it, and
// its standard output holds nothing but what the program printed (the
// JVM's own log goes to standard error). A JVM killed writes none, and
// leaves no claim that would stop the next writer.
func TestArchiveWrittenOnceAndUsed(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	jar := helloJar(t)
	archive, err := Archive("java", jar)
	if err != nil {
		t.Fatal(err)
	}

	err = Write("java", jar, func(flags []string) error {
		cmd := exec.Command("java", append(flags, "-cp", jar, "Hello")...)
		if err := cmd.Start(); err != nil {
			return err
		}
		cmd.Process.Kill()
		return cmd.Wait()
	})
	if err == nil {
		t.Errorf("a JVM killed at once: Write gave no error")
	}
	if _, err := os.Stat(archive); err == nil {
		t.Fatalf("a JVM killed at once wrote the archive %s", archive)
	}
	if left, _ := filepath.Glob(archive + ".*"); len(left) > 0 {
		t.Errorf("left behind by a killed writer: %v", left)
	}

	runs := 0
	write := func(flags []string) error {
		runs++
		out, err := exec.Command("java", append(flags, "-cp", jar, "Hello")...).Output()
		if string(out) != "hello\n" {
			t.Errorf("the writing JVM's standard output: %q, want only the program's", out)
		}
		return err
	}
	if err := Write("java", jar, write); err != nil {
		t.Fatal(err)
	}
	if err := Write("java", jar, write); err != nil || runs != 1 {
		t.Errorf("a second Write: %v, %d JVMs run; want none once the archive exists", err, runs)
	}
	flags := Flags("java", jar)
	if !slices.Contains(flags, "-XX:SharedArchiveFile="+archive) {
		t.Fatalf("Flags = %v, want the archive %s", flags, archive)
	}
	// -Xshare:on fails unless the archive maps.
	out, err := exec.Command("java", append(append([]string{"-Xshare:on"}, flags...), "-cp", jar, "Hello")...).Output()
	if err != nil || string(out) != "hello\n" {
		t.Errorf("a JVM on the archive (-Xshare:on): %v, standard output %q", err, out)
	}

	// Another jar (rebuilt: another size) has another archive.
	if err := os.WriteFile(jar, append(mustRead(t, jar), 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if other, _ := Archive("java", jar); other == archive || strings.Contains(strings.Join(Flags("java", jar), " "), "SharedArchiveFile") {
		t.Errorf("a rebuilt jar: archive %s, flags %v; want another archive, not yet written", other, Flags("java", jar))
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
