package record

import (
	"fmt"
	"time"
)

// MaxScrapeRate is the most scrapes per second one recorder takes on, all
// targets and endpoints on a cadence together (a target at 1 s with one
// extra endpoint is 2 per second). Past it the recorder would fall behind
// its own schedule and write ticks as "recorder stalled" that no engine
// caused; a configuration asking for more is refused. Chosen on the
// project's 2-core machine while it was shared with other work: 1,000
// targets at 1 s kept their cadence in a quiet minute, 2,000 never did
// (BenchmarkCadenceManyTargets). Record more targets with a longer
// interval or with several recorders.
const MaxScrapeRate = 1000

// MaxTargets is the most targets one recorder takes on, whatever their
// interval: each is a schedule, a client and an entry of the manifest
// rewritten at every change of the set, and a file_sd file growing to
// 100,000 targets grew the recorder by 90 MB/s. Twice what the rate cap
// allows at 1 s: the targets at 2 s it allows.
const MaxTargets = 2 * MaxScrapeRate

// checkCapacity refuses a target set past MaxTargets or MaxScrapeRate: at
// start, and at every reload of discovery.
func checkCapacity(targets []Target) error {
	if len(targets) > MaxTargets {
		return fmt.Errorf("%d targets; one recorder takes at most %d (several recorders, each with a part of the fleet)", len(targets), MaxTargets)
	}
	var rate float64
	for _, t := range targets {
		n := 1
		for _, e := range t.Endpoints {
			if !e.Once {
				n++
			}
		}
		rate += float64(n) * float64(time.Second) / float64(t.Interval)
	}
	if rate > MaxScrapeRate*(1+1e-9) { // a sum of tenths is not exact

		return fmt.Errorf("%d targets ask for %.0f scrapes per second; one recorder takes at most %d (a longer interval, fewer targets or several recorders)",
			len(targets), rate, MaxScrapeRate)
	}
	return nil
}
