package expo

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestPlainLabelAsJSON: wherever PlainLabel answers, it answers what
// encoding/json maps the label to; it answers for what the recorder
// writes, and leaves escapes, spaces, repeats and non-strings to the
// decoder or reads them as it does.
func TestPlainLabelAsJSON(t *testing.T) {
	check := func(labels string, wantPlain bool) {
		t.Helper()
		v, found, plain := PlainLabel(labels, "le")
		if plain != wantPlain {
			t.Errorf("%q: plain %v, want %v", labels, plain, wantPlain)
		}
		if !plain {
			return
		}
		m := map[string]string{}
		if labels == "" {
			labels = "{}"
		}
		if err := json.Unmarshal([]byte(labels), &m); err != nil {
			t.Fatalf("%q: plain, but the decoder refuses it: %v", labels, err)
		}
		want, ok := m["le"]
		if v != want || found != ok {
			t.Errorf("%q: %q %v, decoder %q %v", labels, v, found, want, ok)
		}
	}
	for _, c := range []struct {
		labels string
		plain  bool
	}{
		{"", true}, {"{}", true},
		{`{"le":"0.5"}`, true},
		{`{"engine":"0","le":"+Inf","model_name":"m"}`, true},
		{`{"a":"le","b":"x"}`, true},        // le as a value is no key
		{`{"le":"1","le":"2"}`, true},       // the last of repeated keys
		{`{"l":"e\",\"le\":\"3"}`, false},   // escapes: decoded
		{`{"le":"0.5", "x":"y"}`, false},    // a space
		{`{"le":0.5}`, false},               // not a string
		{`{"le":"0.5"`, false},              // cut
		{`{"le":"0.5",}`, false},            // trailing comma
		{"{\"le\":\"0.\t5\"}", false},       // a control byte
		{`{"x":"\u006ce","le":"2"}`, false}, // an escape anywhere
		{`["le","0.5"]`, false},             // not an object
		{"{\"le\":\"\xff0.5\"}", false},     // past ASCII: the decoder rewrites invalid UTF-8
	} {
		check(c.labels, c.plain)
	}
	// What the recorder writes is plain unless a value needs an escape.
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("le_0.5+Inf,:{}ab")
	for range 2000 {
		m := map[string]string{}
		for range r.IntN(4) {
			k, v := []byte{}, []byte{}
			for range 1 + r.IntN(3) {
				k = append(k, alphabet[r.IntN(len(alphabet))])
			}
			for range r.IntN(5) {
				v = append(v, alphabet[r.IntN(len(alphabet))])
			}
			m[string(k)] = string(v)
		}
		if r.IntN(2) == 0 {
			m["le"] = "0.25"
		}
		check(EncodeLabels(m), true)
	}
}
