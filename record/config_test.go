package record

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

const goodConfig = `
interval = "1s"
rotate = "30s"
[[target]]
name = "vllm"
url = "http://user:pw@127.0.0.1:8000/metrics?api_key=s3cret&x=1"
engine = "vllm"
bearer_token_env = "LLMREC_TEST_TOKEN"
headers = { "X-Api-Key" = "hunter2", "X-Bench" = "run-7" }
[[target]]
name = "llama"
url = "http://127.0.0.1:8080/metrics"
interval = "500ms"
timeout = "300ms"
[[target.endpoint]]
path = "/slots"
[[target.endpoint]]
path = "/props"
once = true
`

func TestParseConfigDefaultsAndOverrides(t *testing.T) {
	t.Setenv("LLMREC_TEST_TOKEN", "tok")
	c, err := ParseConfig([]byte(goodConfig), "bench.toml")
	if err != nil {
		t.Fatal(err)
	}
	v, l := c.Targets[0], c.Targets[1]
	if v.Interval.D() != time.Second || v.Timeout.D() != time.Second {
		t.Errorf("vllm interval/timeout = %s/%s, want the file's 1s and the interval", v.Interval.D(), v.Timeout.D())
	}
	if l.Interval.D() != 500*time.Millisecond || l.Timeout.D() != 300*time.Millisecond {
		t.Errorf("llama interval/timeout = %s/%s", l.Interval.D(), l.Timeout.D())
	}
	if len(l.Endpoints) != 2 || !l.Endpoints[1].Once || c.MaxBody != DefaultMaxBody || c.Rotate.D() != 30*time.Second || c.CompactEvery != 10 {
		t.Errorf("config %+v", c)
	}
}

// The effective config written to the manifest holds no secret: no URL
// credentials, no credential-like header or query value, no token.
func TestRedactedHoldsNoSecret(t *testing.T) {
	t.Setenv("LLMREC_TEST_TOKEN", "tok-value-123")
	c, err := ParseConfig([]byte(goodConfig), "bench.toml")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(c.Redacted())
	s := string(b)
	for _, secret := range []string{"pw", "s3cret", "hunter2", "tok-value-123"} {
		if strings.Contains(s, secret) {
			t.Errorf("redacted config holds %q: %s", secret, s)
		}
	}
	for _, kept := range []string{"LLMREC_TEST_TOKEN", "run-7", "x=1"} {
		if !strings.Contains(s, kept) {
			t.Errorf("redacted config lost %q: %s", kept, s)
		}
	}
	if strings.Contains(c.Targets[0].URL, "s3cret") == false {
		t.Error("Redacted changed the original")
	}
}

// Unknown keys and bad values are errors naming file, line and key.
func TestConfigErrorsNameFileLineKey(t *testing.T) {
	cases := []struct{ text, want string }{
		{"interval = \"1s\"\nintervall = \"2s\"\n", `bench.toml:2: unknown key "intervall"`},
		{"[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1/metrics\"\ntimout = \"1s\"\n", `bench.toml:4: unknown key "target.timout"`},
		{"[[target]]\nname = \"a\"\nurl = \"http://h/m\"\n[target.extra]\nx = 1\n", `bench.toml:4: unknown key "target.extra`},
		{"interval = \"fast\"\n", `bench.toml:1:`},
		{"interval = 5\n", "bench.toml"},
		{"[[target]\nname=1", "bench.toml:2: expected end of table array name"},
		{"[[target]]\nname = \"a b\"\nurl = \"http://h/m\"\n", `target "a b": name`},
		{"[[target]]\nname = \"a\"\nurl = \"ftp://h/m\"\n", `target "a": url "ftp://h/m" is not an http(s) URL`},
		{"[[target]]\nname = \"a\"\nurl = \"http://h/m\"\n[[target]]\nname = \"a\"\nurl = \"http://h/n\"\n", "used twice"},
		{"[[target]]\nname = \"a\"\nurl = \"http://h/m\"\nbearer_token_env = \"LLMREC_SURELY_UNSET\"\n", "LLMREC_SURELY_UNSET, which is not set"},
		{"[[target]]\nname = \"a\"\nurl = \"http://h/m\"\n[[target.endpoint]]\npath = \"slots\"\n", `path "slots" must start with /`},
		{"[[target]]\nname = \"a\"\nurl = \"http://h/metrics\"\n[[target.endpoint]]\npath = \"/metrics\"\n", "target's own URL"},
		{"interval = \"1ms\"\n", "below 10ms"},
		{"timeout = \"-1s\"\n", "negative"},
		{"max_body_bytes = -1\n", "negative"},
		{"compact_every = -1\n", "compact_every -1 is negative"},
		{"[[target]]\nname = \"a\"\nurl = \"http://h/m\"\ninterval = \"-1s\"\n", "negative"},
	}
	for _, c := range cases {
		_, err := ParseConfig([]byte(c.text), "bench.toml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to contain %q", c.text, err, c.want)
		}
	}
}

func TestParseTargetFlag(t *testing.T) {
	tg, err := ParseTargetFlag("vllm=http://127.0.0.1:8000/metrics")
	if err != nil || tg.Name != "vllm" || tg.URL != "http://127.0.0.1:8000/metrics" {
		t.Fatalf("%+v %v", tg, err)
	}
	for _, bad := range []string{"vllm", "=http://x", "vllm="} {
		if _, err := ParseTargetFlag(bad); err == nil || !strings.Contains(err.Error(), "NAME=URL") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte("interval = \"2s\"\n[[target]]\nname=\"a\"\nurl=\"http://127.0.0.1/metrics\"\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		c, err := ParseConfig(text, "fuzz.toml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.toml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		// Anything accepted is valid and complete.
		for _, tg := range c.Targets {
			if tg.Interval <= 0 || tg.Timeout <= 0 || tg.Name == "" {
				t.Fatalf("accepted target without defaults: %+v", tg)
			}
		}
		if c.MaxBody <= 0 {
			t.Fatalf("accepted config without a body cap")
		}
	})
}

// Parse limits come from the file, default to capture's, and a negative one
// is an error.
func TestParseLimitsConfig(t *testing.T) {
	c, err := ParseConfig([]byte("max_series = 10\nmax_label_bytes = 4096\n"), "limits.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := capture.Limits{MaxSeries: 10, MaxLabelValueBytes: capture.DefaultLimits.MaxLabelValueBytes, MaxLabelBytes: 4096}
	if got := c.Limits(); got != want {
		t.Errorf("limits %+v, want %+v", got, want)
	}
	if c, _ := ParseConfig(nil, "empty.toml"); c.Limits() != capture.DefaultLimits {
		t.Errorf("default limits %+v", c.Limits())
	}
	if _, err := ParseConfig([]byte("max_series = -1\n"), "neg.toml"); err == nil || !strings.Contains(err.Error(), "max_series") {
		t.Errorf("negative max_series: %v", err)
	}
}
