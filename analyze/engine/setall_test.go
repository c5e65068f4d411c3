package engine

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/expo"
)

// A poll with the ids of the poll before reads as SetAll building every
// name slot anew would have it read: the same cells and slot lists as a
// tracker fed each poll in two calls (which never reuses the lists),
// across an absent sample, a repeated series, fewer series, a reordered
// pair and a new series.
func TestSetAllAgain(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(realCaptures, "vllm-v1-armandossrecife-vllm-server-api-chat.txt"))
	if err != nil {
		t.Skipf("no real vLLM capture (%v): the shared folder is absent", err)
	}
	ss, err := expo.Parse(body, "text/plain; version=0.0.4")
	if err != nil {
		t.Fatal(err)
	}
	base := make([]float64, len(ss))
	for j := range ss {
		base[j] = ss[j].Value
	}
	one, two := NewTracker(VLLM, rate.Config{Span: 10}), NewTracker(VLLM, rate.Config{Span: 10})
	var ids []int32
	for j := range ss {
		s := &ss[j]
		id := one.Key(Series{Family: s.Family, Type: s.Type, Name: s.Name, Labels: s.Labels})
		if two.Key(Series{Family: s.Family, Type: s.Type, Name: s.Name, Labels: s.Labels}) != id {
			t.Fatal("the trackers key differently")
		}
		ids = append(ids, id)
	}
	extra := Series{Family: "vllm:num_requests_waiting", Type: "gauge", Name: "vllm:num_requests_waiting", Labels: `{"engine":"9"}`}
	var a, b Cells
	again := 0
	for i := range 48 {
		advancePage(ss, base, i)
		pid := slices.Clone(ids)
		vals := make([]float64, len(ss))
		for j := range ss {
			vals[j] = ss[j].Value
		}
		switch i {
		case 10: // an absent sample
			vals[7] = math.NaN()
		case 12: // an absent first sample
			vals[0] = math.Inf(1)
		case 15: // an absent sample past the first counters
			vals[len(vals)/2] = math.NaN()
		case 17, 18: // an absent sample the estimator is fed (the one after the first fed)
			if len(one.feeds) < 2 {
				t.Fatal("no fed samples kept")
			}
			vals[one.feeds[1].pos] = math.NaN()
		case 20: // fewer series
			pid, vals = pid[:len(pid)-5], vals[:len(vals)-5]
		case 25: // a series twice
			pid[3] = pid[2]
		case 30: // a pair swapped
			pid[4], pid[5] = pid[5], pid[4]
		case 32, 33, 34: // a pair swapped and a series left out, poll after poll: the ids in runs
			pid[4], pid[5] = pid[5], pid[4]
			pid, vals = slices.Delete(pid, 9, 10), slices.Delete(vals, 9, 10)
			if i == 34 { // a fall in the third run
				for j := 12; j < len(pid); j++ {
					if ss[j+1].Type == "counter" {
						vals[j] = 0
						break
					}
				}
			}
		case 40, 41: // a counter falls: a restart, in a poll like the last
			for j := range ss {
				if ss[j].Type == "counter" {
					vals[j] = 0
					break
				}
			}
		case 44, 45: // empty polls
			pid, vals = pid[:0], vals[:0]
		case 35: // a new series
			id := one.Key(extra)
			two.Key(extra)
			pid, vals = append(pid, id), append(vals, 3)
		}
		T := 1e9 + 2*float64(i)
		one.Begin(T, T-0.01)
		two.Begin(T, T-0.01)
		ok := one.lastOK && one.setSeq != one.seq && sameInt32s(pid, one.lastIDs)
		one.SetAll(pid, vals)
		h := len(pid) / 2
		two.SetAll(pid[:h], vals[:h])
		two.SetAll(pid[h:], vals[h:])
		if ok {
			again++
		}
		a, b = one.End(a), two.End(b)
		if !slices.Equal(one.poll.Readings, two.poll.Readings) || !slices.Equal(one.pollIDs, two.pollIDs) {
			t.Fatalf("poll %d: the estimator's readings differ:\n%v\n%v", i, one.poll.Readings, two.poll.Readings)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("poll %d: cells differ:\n%+v\n%+v", i, a, b)
		}
		for s := range one.slots {
			x, y := &one.slots[s], &two.slots[s]
			if (x.seq == one.seq) != (y.seq == two.seq) || x.seq == one.seq && !slices.Equal(x.keys, y.keys) {
				t.Fatalf("poll %d: slot %s: %v %v, want %v %v", i, x.name, x.seq, x.keys, y.seq, y.keys)
			}
		}
		if one.samples != two.samples || one.Restart() != two.Restart() {
			t.Fatalf("poll %d: %d samples %q, want %d %q", i, one.samples, one.Restart(), two.samples, two.Restart())
		}
	}
	// Every poll but the first, the odd ones and those right after them.
	if again < 48-1-2*9 {
		t.Errorf("%d polls reused the slots' lists", again)
	}
}

func TestRunsOf(t *testing.T) {
	for _, c := range []struct {
		ids  []int32
		want []idRun
	}{
		{nil, nil},
		{[]int32{7}, []idRun{{0, 7, 1}}},
		{[]int32{0, 1, 2, 3}, []idRun{{0, 0, 4}}},
		{[]int32{0, 1, 3, 2, 4, 5, 5}, []idRun{{0, 0, 2}, {2, 3, 1}, {3, 2, 1}, {4, 4, 2}, {6, 5, 1}}},
	} {
		got := runsOf([]idRun{{9, 9, 9}}, c.ids)
		if !slices.Equal(got, c.want) {
			t.Errorf("runsOf(%v) = %v, want %v", c.ids, got, c.want)
		}
	}
}
