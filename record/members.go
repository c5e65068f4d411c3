package record

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/redact"
)

// members are the targets scraped now and every target the run has had
// (its index in the recorder's stats and the manifest's targets). All but
// start are called with the manifest's mutex held.
type members struct {
	rec    *recorder
	ctx    context.Context // the run's: its end stops every tick loop
	wg     *sync.WaitGroup // of the tick loops
	shared *http.Client    // of the targets without TLS options
	warn   io.Writer
	// dynamic is set when discovery may change the set: the manifest
	// then records each target's presence.
	dynamic bool
	index   map[string]int
	present map[string]*member
	infos   sync.WaitGroup // engine-information fetches of joiners
}

// member is a target scraped now.
type member struct {
	t     *Target
	ti    int
	leave context.CancelFunc
}

func newMembers(ctx context.Context, rec *recorder, wg *sync.WaitGroup, shared *http.Client, dynamic bool, warn io.Writer) *members {
	return &members{rec: rec, ctx: ctx, wg: wg, shared: shared, warn: warn, dynamic: dynamic,
		index: map[string]int{}, present: map[string]*member{}}
}

// manifestTarget is how the manifest describes t.
func manifestTarget(t *Target, phase time.Duration) capture.ManifestTarget {
	mt := capture.ManifestTarget{Name: t.Name, URL: redact.URL(t.URL), Engine: t.Engine,
		IntervalNs: int64(t.Interval), TimeoutNs: int64(t.Timeout), PhaseNs: int64(phase),
		ProcessStartHeader: t.ProcessStartHeader}
	for _, e := range t.Endpoints {
		mt.Endpoints = append(mt.Endpoints, redact.URL(e.Path))
	}
	return mt
}

// join starts scraping t from the first tick of its schedule at or after
// now. A name the run had before keeps its index and phase; a new one
// takes phase.
func (ms *members) join(m *capture.Manifest, t Target, client *http.Client, phase time.Duration, now time.Time) {
	r := ms.rec
	ti, seen := ms.index[t.Name]
	if !seen {
		ti = len(m.Targets)
		ms.index[t.Name] = ti
		m.Targets = append(m.Targets, manifestTarget(&t, phase))
		r.mu.Lock()
		r.stats = append(r.stats, TargetStats{Name: t.Name})
		r.clients = append(r.clients, client)
		r.mu.Unlock()
	} else {
		phase = time.Duration(m.Targets[ti].PhaseNs)
		r.mu.Lock()
		r.clients[ti] = client
		r.stats[ti].Left = false
		r.mu.Unlock()
	}
	if ms.dynamic {
		p := capture.Presence{JoinNs: r.clock.Ns(now)}
		if u := redact.URL(t.URL); u != m.Targets[ti].URL {
			p.URL = u
		}
		m.Targets[ti].Presence = append(m.Targets[ti].Presence, p)
	}
	// The first tick of its own schedule not yet past: tick k is due at
	// start + phase + k*interval, as for every target.
	interval := t.Interval.D()
	k0 := int64(0)
	if d := now.Sub(r.clock.Start().Add(phase)); d > 0 {
		k0 = int64((d + interval - 1) / interval)
	}
	ctx, leave := context.WithCancel(ms.ctx)
	tp := &t
	ms.present[t.Name] = &member{t: tp, ti: ti, leave: leave}
	ms.wg.Go(func() { r.loop(ctx, ti, tp, phase, k0) })
}

// leave stops scraping a target: no tick fires any more; its scrape in
// flight finishes and is written as any other.
func (ms *members) leave(m *capture.Manifest, name string, now time.Time) {
	mb := ms.present[name]
	delete(ms.present, name)
	mb.leave()
	ns := ms.rec.clock.Ns(now)
	if ps := m.Targets[mb.ti].Presence; len(ps) > 0 {
		ps[len(ps)-1].LeaveNs = &ns
	}
	ms.rec.mu.Lock()
	ms.rec.stats[mb.ti].Left = true
	ms.rec.mu.Unlock()
}

// apply makes the targets scraped the targets found: those no longer
// found (or found defined otherwise) leave, those not scraped join. It
// returns whether anything changed and the targets that joined.
func (ms *members) apply(m *capture.Manifest, found []Target, now time.Time) (changed bool, joined []Target) {
	want := make(map[string]*Target, len(found))
	for i := range found {
		want[found[i].Name] = &found[i]
	}
	for _, name := range slices.Sorted(maps.Keys(ms.present)) {
		if w, ok := want[name]; !ok || !sameTarget(w, ms.present[name].t) {
			ms.leave(m, name, now)
			changed = true
		}
	}
	for _, t := range found {
		if _, ok := ms.present[t.Name]; ok {
			continue
		}
		client, err := clientFor(&t, ms.shared)
		if err != nil {
			if ms.warn != nil {
				fmt.Fprintf(ms.warn, "warning: %v; not scraped\n", err)
			}
			continue
		}
		// Said at its first join, as at start, and kept in the manifest.
		for _, w := range insecureWarnings([]Target{t}) {
			if !slices.Contains(m.Warnings, w) {
				m.Warnings = append(m.Warnings, w)
				if ms.warn != nil {
					fmt.Fprintf(ms.warn, "warning: %s\n", w)
				}
			}
		}
		ms.join(m, t, client, joinPhase(t.Name, t.Interval.D()), now)
		joined = append(joined, t)
		changed = true
	}
	return changed, joined
}

// maxManifestWarnings bounds the warnings discovery adds to the manifest.
const maxManifestWarnings = 64

// follow computes the target set every interval and applies it, writing
// the manifest at each change, until ctx is done.
func (ms *members) follow(ctx context.Context, d *discovery, every time.Duration, dir string, m *capture.Manifest, mu *sync.Mutex) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		found := d.targets(ctx)
		if ctx.Err() != nil {
			return
		}
		mu.Lock()
		changed, joined := ms.apply(m, found, time.Now())
		// A set refused for capacity is said in the manifest too (its
		// warnings bounded: a file growing each tick words each anew).
		if w := d.refused; w != "" && !slices.Contains(m.Warnings, w) && len(m.Warnings) < maxManifestWarnings {
			m.Warnings = append(m.Warnings, w)
			changed = true
		}
		var err error
		if changed {
			err = capture.WriteManifest(dir, *m)
		}
		mu.Unlock()
		if err != nil && ms.warn != nil {
			fmt.Fprintf(ms.warn, "warning: the targets' joins and leaves: %v\n", err)
		}
		if len(joined) == 0 {
			continue
		}
		// What a joiner says about itself is fetched beside its first
		// ticks, as at start.
		ms.infos.Go(func() {
			hc := make([]*http.Client, len(joined))
			for i := range joined {
				hc[i], _ = clientFor(&joined[i], ms.shared)
			}
			infos := engineInfo(ctx, hc, joined, nil)
			mu.Lock()
			defer mu.Unlock()
			m.Engines = mergeInfo(m.Engines, infos)
		})
	}
}

// mergeInfo adds engine information to what the manifest holds.
func mergeInfo(to, from map[string][]capture.EngineInfo) map[string][]capture.EngineInfo {
	if to == nil {
		return from
	}
	maps.Copy(to, from)
	return to
}
