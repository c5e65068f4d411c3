package engine

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/expo"
)

// grown returns the samples of a poll k polls on: every value times k+1,
// so that counters move and rates are made.
func grown(ss []expo.Sample, k int) []expo.Sample {
	out := make([]expo.Sample, len(ss))
	for i, s := range ss {
		s.Value *= float64(k + 1)
		out[i] = s
	}
	return out
}

// Trackers sharing one Memo (each real capture replayed twice, the second
// time every series a lookup) make the same cells, poll by poll, as
// trackers working each series out alone.
func TestMemoSameCells(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(realCaptures, "*.txt"))
	if len(files) == 0 {
		t.Skipf("no real captures in %s (the shared folder is absent)", realCaptures)
	}
	memo := NewMemo()
	for pass := range 2 {
		for _, f := range files {
			ss := readCapture(t, f)
			alone, shared := NewTracker("", rate.Config{}), NewTracker("", rate.Config{})
			shared.UseMemo(memo)
			if shared.Memo() != memo || alone.Memo() != nil {
				t.Fatal("Memo does not return the memo in use")
			}
			for k := range 4 {
				p := grown(ss, k)
				T := 1000 + 5*float64(k)
				want := describe(f, alone.ObserveSamples(T, T-0.01, p, nil), alone)
				got := describe(f, shared.ObserveSamples(T, T-0.01, p, nil), shared)
				if got != want {
					t.Fatalf("pass %d, %s poll %d with a memo:\n%s\nwithout:\n%s", pass, filepath.Base(f), k, got, want)
				}
			}
		}
	}
}

// A series keyed before by another tracker sharing the memo costs a
// lookup: keying a real vLLM page allocates less with a warm memo.
func TestMemoSavesWork(t *testing.T) {
	f := filepath.Join(realCaptures, "vllm-v1-armandossrecife-vllm-server-api-chat.txt")
	files, _ := filepath.Glob(f)
	if len(files) == 0 {
		t.Skipf("no real capture %s (the shared folder is absent)", f)
	}
	ss := readCapture(t, f)
	keyAll := func(m *Memo) {
		tr := NewTracker("", rate.Config{})
		tr.UseMemo(m)
		for _, s := range ss {
			tr.Key(Series{Family: s.Family, Type: s.Type, Name: s.Name, Labels: s.Labels})
		}
	}
	warm := NewMemo()
	keyAll(warm)
	with := testing.AllocsPerRun(5, func() { keyAll(warm) })
	without := testing.AllocsPerRun(5, func() { keyAll(nil) })
	if with >= without {
		t.Fatalf("keying %d samples: %v allocations with a warm memo, %v without", len(ss), with, without)
	}
	t.Logf("keying %d samples: %v allocations with a warm memo, %v without", len(ss), with, without)
}

// canonicalLabels' plain path writes what the general one (jsonPairs or
// DecodeLabels, then rate.Labels) writes, on the objects it takes:
// hand-written ones and random one-byte changes of them.
func TestPlainCanonical(t *testing.T) {
	objs := []string{
		`{"a":"x"}`, `{"engine":"0","le":"0.001","model_name":"meta-llama/Llama-3.1-8B-Instruct"}`,
		`{"":"x"}`, `{"a":""}`, `{"a":"x","b":"y"}`, `{"b":"x","a":"y"}`, `{"a":"x","a":"y"}`,
		`{"a":"x\"y"}`, `{"a":"x\ny"}`, `{"a":"x` + "\n" + `"}`, `{"a":"x",}`, `{"a":"x" }`, `{"a" :"x"}`,
		`{"a":"x","b"}`, `{"a":x}`, `{"a":"x"`, `"a":"x"}`, `{"a":"x","b":"y,z="}`, `{"a=":"x"}`, `{a:"x"}`,
	}
	general := generalCanonical
	check := func(js string) bool {
		got, ok := plainCanonical(js)
		if ok && got != general(js) {
			t.Fatalf("plainCanonical(%q) = %q, the general path %q", js, got, general(js))
		}
		return ok
	}
	plain := 0
	for _, js := range objs {
		if check(js) {
			plain++
		}
	}
	// The plain ones: the first five, and two of the last three.
	if plain != 7 {
		t.Fatalf("%d of the hand-written objects taken as plain, want 7", plain)
	}
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = `{}:",\ ` + "\nabxz0"
	for range 20000 {
		b := []byte(objs[r.IntN(len(objs))])
		b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
		check(string(b))
	}
}

// A label set that is not plain takes withoutLabel's general path: its
// values unescaped and escaped again, its names put in order.
func TestWithoutLabelGeneral(t *testing.T) {
	for in, want := range map[string]string{
		`{a="x\"y",le="1"}`:    `{a="x\"y"}`,
		`{b="1",a="2",le="3"}`: `{a="2",b="1"}`,
		`{le="x\\y"}`:          "",
	} {
		if got := withoutLabel(in, "le"); got != want {
			t.Errorf("withoutLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
