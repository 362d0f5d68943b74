package runner

import (
	"errors"

	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/settings"
)

// claimOut makes dir ready for a new run and claims it for the run's life
// (rundir.Claim); a folder that holds a run already, or whose run is
// still live, is the user's to fix.
func claimOut(dir string, force bool) (*rundir.Claimed, error) {
	c, err := rundir.Claim(dir, force)
	if held := (*rundir.HeldError)(nil); errors.As(err, &held) {
		return nil, settings.UsageError{Err: err}
	}
	return c, err
}
