package runner

import (
	"errors"

	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/settings"
)

// claimOut makes dir ready for a new run (rundir.Claim); a folder that
// holds a run already is the user's to fix.
func claimOut(dir string, force bool) error {
	err := rundir.Claim(dir, force)
	if held := (*rundir.HeldError)(nil); errors.As(err, &held) {
		return settings.UsageError{Err: err}
	}
	return err
}
