package rate

import (
	"math/rand/v2"
	"testing"
)

// PlainWithout agrees with eachLabel and Labels on every set it takes,
// and takes the plain sets: hand-written ones and random one-byte changes
// of them.
func TestPlainWithout(t *testing.T) {
	sets := []string{
		"", "{}", `{le="0.5"}`, `{a="x",le="1"}`, `{le="1",z="y"}`, `{a="x",le="+Inf",z="y"}`,
		`{engine="0",le="0.001",model_name="meta-llama/Llama-3.1-8B-Instruct"}`,
		`{a="x",b="y"}`, `{a="",le=""}`, `{b="x",a="y",le="1"}`, `{a="x",a="y",le="1"}`,
		`{a="x\"y",le="1"}`, `{a="x` + "\n" + `",le="1"}`, `{a="x",le="1",}`, `{a="x"le="1"}`,
		`{="x",le="1"}`, `{a="x,le="1"}`, `{a,b="x",le="2"}`, `{a="x",le="1"`, `le="1"}`, `{a=x}`,
		`{le="1",le="2"}`, `{a="x"}`, `{a="x",le`, `{,le="1"}`,
	}
	general := func(labels, name string) (string, bool) {
		var pairs []string
		if !eachLabel(labels, func(n, v string) bool {
			if n != name {
				pairs = append(pairs, n, v)
			}
			return true
		}) {
			return "", false
		}
		return Labels(pairs...), true
	}
	check := func(labels string) bool {
		got, ok := PlainWithout(labels, "le")
		if !ok {
			return false
		}
		want, wok := general(labels, "le")
		if !wok || got != want {
			t.Fatalf("PlainWithout(%q) = %q, general path %q (well formed %v)", labels, got, want, wok)
		}
		return true
	}
	plain := 0
	for _, s := range sets {
		if check(s) {
			plain++
		}
	}
	// The plain ones: the first eleven but the reordered and the doubled,
	// and three odd but well formed ones after (a name with a comma).
	if plain != 12 {
		t.Fatalf("%d of the hand-written sets taken as plain, want 12", plain)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = `{}=",\` + "\nalez01"
	for range 20000 {
		b := []byte(sets[r.IntN(len(sets))])
		if len(b) == 0 {
			continue
		}
		b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
		check(string(b))
	}
}

// A bucket whose label set is not plain gets its group key by the
// general path; one that is not well formed has none.
func TestGroupKeyGeneral(t *testing.T) {
	k, ok := groupKey(Key{Series: "h_bucket", Labels: `{b="1",a="x\"y",le="3"}`})
	if want := (Key{Series: "h_bucket", Labels: `{a="x\"y",b="1"}`}); !ok || k != want {
		t.Errorf("groupKey = %+v, %v; want %+v, true", k, ok, want)
	}
	if _, ok := groupKey(Key{Series: "h_bucket", Labels: `{a="x\",le="3"}`}); ok {
		t.Error("groupKey of a set that is not well formed: ok")
	}
	b := BucketOf(Key{Series: "h_bucket", Labels: `{a="x",le="0.5"}`})
	if !b.grouped || b.group != (Key{Series: "h_bucket", Labels: `{a="x"}`}) || !b.leOK || b.le != 0.5 {
		t.Errorf("BucketOf = %+v", b)
	}
}
