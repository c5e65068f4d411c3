package expo

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"testing"
)

// DecodeLabels is encoding/json's reading of the object, whatever the
// object: its plain path (printable ASCII, no escapes) and the rest agree
// with json.Unmarshal on the value and on whether it is an error, for
// label sets EncodeLabels writes, odd ones written by hand, and each of
// them with a byte changed at random.
func TestDecodeLabelsIsJSON(t *testing.T) {
	seeds := []string{
		`{"le":"0.5","model_name":"m"}`, `{"a":"x"}`, `{"a":"x","a":"y"}`, `{"a":""}`, `{"":"x"}`,
		`{"a":"x",}`, `{"a":"x""b":"y"}`, `{"a":1}`, `{"a":"x"}}`, `{"a":"x"`, `{"a" :"x"}`, `{ "a":"x"}`,
		`{"a":"\u00e9"}`, `{"a":"é"}`, `{"a":"\"q\""}`, `{"a":"x\ty"}`, "{\"a\":\"\xff\"}", `{"a":"x\\"}`,
		`{"a","x"}`, `{"a":"x":"y"}`, `{,}`, `{"a":"x",,"b":"y"}`, `[]`, `{}x`, `"a"`, `{"a":null}`,
		EncodeLabels(map[string]string{"z": "1", "a": "</script>", "q": "\"\\\n\t\x01&", "model_name": "Qwen/Qwen2.5-7B"}),
		EncodeLabels(map[string]string{"engine": "0", "le": "+Inf", "model_name": "m", "finished_reason": "stop"}),
	}
	rng := rand.New(rand.NewPCG(24, 8))
	alphabet := []byte("{}[]\":,\\ \tabcu0123456789\x00\x1f\x7f\xc3\xa9\xff")
	check := func(s string) {
		t.Helper()
		want := map[string]string{}
		werr := json.Unmarshal([]byte(s), &want)
		got, err := DecodeLabels(s)
		if (err != nil) != (werr != nil) {
			t.Fatalf("%q: error %v, encoding/json's %v", s, err, werr)
		}
		if err == nil && !maps.Equal(got, want) {
			t.Fatalf("%q: %q, encoding/json's %q", s, got, want)
		}
	}
	plain := 0
	for _, s := range seeds {
		check(s)
		if plainLabels(s, map[string]string{}) {
			plain++
		}
		for range 500 {
			b := []byte(s)
			b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
			check(string(b))
		}
	}
	// The plain path is taken: the cases above test it.
	if plain < 5 {
		t.Fatalf("%d of the %d objects read plainly", plain, len(seeds))
	}
}
