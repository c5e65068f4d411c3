package analyze

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/sim"
)

// A Session read up to an instant that moves a second at a time delivers
// the same rows and polls, in the same order, and makes the same results, whether
// it resumes each file at the first row after the last instant
// (resumed), copies as few rows read out of order as it can (every such
// row then sends the file back to being read from its first row), or
// reads every file not read whole from its first row at every update.
func TestSessionResumesAsReread(t *testing.T) {
	const d = 3 * time.Minute
	dir := t.TempDir()
	sc := sim.LongScenario(6, d, 3)
	// llama.cpp restarts twice, answering 503 Loading model for 5 s: the
	// body a replay reads.
	for _, at := range []time.Duration{70 * time.Second, 130 * time.Second} {
		sc.Engines[3].Events = append(sc.Engines[3].Events, sim.Event{At: at, Kind: sim.EventRestart, For: 5 * time.Second})
	}
	generate(t, sc, dir, sim.GenerateOptions{Interval: time.Second, Duration: d, Seed: 3})
	type run struct {
		name string
		s    *Session
		log  strings.Builder
	}
	var runs []*run
	for _, c := range []struct {
		name     string
		maxLater int
	}{{"reread", 0}, {"resumed", 4096}, {"one copied", 1}} {
		r := &run{name: c.name}
		s, err := NewSession(Options{Dirs: []string{dir},
			Polls: func(target string, p *Poll) {
				b, _ := json.Marshal(p)
				fmt.Fprintf(&r.log, "%s %s\n", target, b)
			},
			Scrapes: func(target string, w ScrapeRow) { fmt.Fprintf(&r.log, "%s %+v\n", target, w) }})
		if err != nil {
			t.Fatal(err)
		}
		s.maxLater = c.maxLater
		r.s = s
		runs = append(runs, r)
		defer s.Close()
	}
	resumedAt, loading := 0, false
	for at := time.Second; at <= d+3*time.Second; at += time.Second {
		until := sim.DefaultStart.Add(at).UnixNano()
		var want string
		for i, r := range runs {
			r.s.SetUntil(until)
			res, err := r.s.Update()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(res)
			got := string(b) + "\n" + r.log.String()
			r.log.Reset()
			if i == 0 {
				want = got
				continue
			}
			if got != want {
				t.Fatalf("at %v, %s differs from reread:\n%.600s\nwant\n%.600s", at, r.name, got, want)
			}
			if i == 1 && len(r.s.resumed) > 0 {
				resumedAt++
			}
		}
		loading = loading || strings.Contains(want, "503 Loading model")
		if !strings.Contains(want, `"cells":`) && at > 10*time.Second {
			t.Fatalf("at %v no poll delivered: the test compares nothing", at)
		}
	}
	// The resumed session held files open at most instants, and let them
	// all go at the end.
	if !loading {
		t.Error("no restart told by a 503 Loading model body: the bodies read later are not compared")
	}
	if resumedAt < int(d/time.Second)/2 || len(runs[1].s.resumed) != 0 || len(runs[2].s.plain) == 0 {
		t.Errorf("files held open at %d instants (%d at the end); %d read again from their first row with one row copied",
			resumedAt, len(runs[1].s.resumed), len(runs[2].s.plain))
	}
}
