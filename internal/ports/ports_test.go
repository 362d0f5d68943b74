package ports

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestMain lets the test binary be the other process: with
// LOCKCHAOS_PORTS_PROBE=port it tries to reserve that port and prints
// whether it could.
func TestMain(m *testing.M) {
	if p := os.Getenv("LOCKCHAOS_PORTS_PROBE"); p != "" {
		port, err := strconv.Atoi(p)
		if err != nil {
			fmt.Println("bad port", p)
			os.Exit(2)
		}
		fmt.Println(reserve(port))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// otherProcessCanReserve asks a second process whether it can reserve port.
func otherProcessCanReserve(t *testing.T, port int) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "LOCKCHAOS_PORTS_PROBE="+strconv.Itoa(port))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe process: %v (%s)", err, out)
	}
	switch strings.TrimSpace(string(out)) {
	case "true":
		return true
	case "false":
		return false
	}
	t.Fatalf("probe process printed %q", out)
	return false
}

// A port handed out under a lease is reserved against every other process
// until the lease is released, and against this process's other leases.
func TestALeasedPortIsReservedUntilReleased(t *testing.T) {
	if lockFile() == nil {
		t.Skip("the lock file in the temporary directory cannot be opened: reservations hold within one process only")
	}
	lease := NewLease()
	port, err := Free(WithLease(context.Background(), lease))
	if err != nil {
		t.Fatal(err)
	}
	if otherProcessCanReserve(t, port) {
		t.Errorf("another process reserved port %d while this one's lease held it", port)
	}
	if reserve(port) {
		t.Errorf("this process reserved port %d twice", port)
	}
	lease.Release()
	if !otherProcessCanReserve(t, port) {
		t.Errorf("another process could not reserve port %d after the lease was released", port)
	}
	// The probe process has ended, and its reservation with it.
	if !reserve(port) {
		t.Errorf("port %d stayed reserved after the process that reserved it ended", port)
	}
	unreserve(port)
}

// Ports asked for under no lease stay reserved for the process.
func TestAPortWithoutALeaseIsHeldForTheProcess(t *testing.T) {
	port, err := Free(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	NewLease().Release() // another lease's release gives back nothing of it
	if reserve(port) {
		t.Errorf("port %d, asked for under no lease, was free again", port)
	}
}

// Free never hands out a port a lease still holds: 300 ports in one lease
// are 300 ports (random picks alone would repeat one, about six times in
// seven).
func TestFreeNeverHandsOutAReservedPort(t *testing.T) {
	lease := NewLease()
	defer lease.Release()
	ctx := WithLease(context.Background(), lease)
	seen := map[int]bool{}
	for i := 0; i < 300; i++ {
		p, err := Free(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice under leases still held", p)
		}
		seen[p] = true
	}
}
