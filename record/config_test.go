package record

import (
	"encoding/json"
	"fmt"
	"slices"
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
// credentials, no query value, no header value outside the allow-list, no
// token. Keys and the token's variable name stay.
func TestRedactedHoldsNoSecret(t *testing.T) {
	t.Setenv("LLMREC_TEST_TOKEN", "tok-value-123")
	c, err := ParseConfig([]byte(goodConfig), "bench.toml")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(c.Redacted())
	s := string(b)
	for _, secret := range []string{"pw", "s3cret", "hunter2", "tok-value-123", "run-7", "x=1"} {
		if strings.Contains(s, secret) {
			t.Errorf("redacted config holds %q: %s", secret, s)
		}
	}
	for _, kept := range []string{"LLMREC_TEST_TOKEN", "X-Bench", `x=\u003credacted\u003e`, "api_key="} {
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
		{"max_body_bytes = 1073741824\n", "is over"},
		{"compact_every = -1\n", "compact_every -1 is negative"},
		{"[[target]]\nname = \"a\"\nurl = \"http://h/m\"\ninterval = \"-1s\"\n", "negative"},
		// A manifest with a longer timeout is refused as edited (capture.MaxTimeout).
		{"[[target]]\nname = \"a\"\nurl = \"http://h/m\"\ntimeout = \"25h\"\n", `target "a": timeout 25h0m0s is over 24h0m0s`},
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

// 1,500 targets at 1 s are refused with the limit, not recorded as a
// wall of "recorder stalled"; at 2 s they are taken on. 10,000 targets
// are refused at any interval (MaxTargets): at 10 s they passed silently.
func TestScrapeRateLimit(t *testing.T) {
	cfg := func(n int, interval time.Duration) *Config {
		c := &Config{Interval: Duration(interval)}
		for i := range n {
			c.Targets = append(c.Targets, Target{Name: fmt.Sprintf("t%d", i), URL: "http://127.0.0.1:9/metrics"})
		}
		return c
	}
	err := cfg(1500, time.Second).Validate()
	if err == nil || !strings.Contains(err.Error(), "1500 targets ask for 1500 scrapes per second; one recorder takes at most 1000") {
		t.Fatalf("1,500 targets at 1 s: %v", err)
	}
	if err := cfg(1500, 2*time.Second).Validate(); err != nil {
		t.Fatalf("1,500 targets at 2 s: %v", err)
	}
	if err := cfg(10000, 10*time.Second).Validate(); err == nil || !strings.Contains(err.Error(), "10000 targets; one recorder takes at most 2000") {
		t.Fatalf("10,000 targets at 10 s: %v", err)
	}
	// Extra endpoints on the cadence count; once-only ones do not.
	c := &Config{Interval: Duration(10 * time.Millisecond)}
	for i := range 6 {
		c.Targets = append(c.Targets, Target{Name: fmt.Sprintf("t%d", i), URL: "http://127.0.0.1:9/metrics",
			Endpoints: []Endpoint{{Path: "/slots"}, {Path: "/props", Once: true}}})
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "6 targets ask for 1200 scrapes per second") {
		t.Fatalf("6 targets of 2 endpoints at 10 ms: %v", err)
	}
}

// follow_redirects is off by default, set globally and overridden per
// target.
func TestFollowRedirectsConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`follow_redirects = true
[[target]]
name = "a"
url = "http://127.0.0.1:1/metrics"
[[target]]
name = "b"
url = "http://127.0.0.1:2/metrics"
follow_redirects = false
`), "r.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Targets[0].follows() || c.Targets[1].follows() {
		t.Errorf("follows: a %v, b %v; want true, false", c.Targets[0].follows(), c.Targets[1].follows())
	}
	d, err := ParseConfig([]byte("[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/metrics\"\n"), "d.toml")
	if err != nil || d.Targets[0].follows() {
		t.Errorf("default: %v, follows %v", err, err == nil && d.Targets[0].follows())
	}
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

// llama.cpp sends its process start on every /metrics answer: a llama.cpp
// target keeps it as restart evidence without config; a configured header
// wins, and another engine gets none.
func TestProcessStartHeaderDefaultsForLlamaCpp(t *testing.T) {
	c, err := ParseConfig([]byte(`[[target]]
name = "l"
url = "http://127.0.0.1:1/metrics"
engine = "llama.cpp"
[[target]]
name = "p"
url = "http://127.0.0.1:2/metrics"
engine = "llamacpp"
process_start_header = "X-Pod-Start"
[[target]]
name = "v"
url = "http://127.0.0.1:3/metrics"
engine = "vllm"
`), "h.toml")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{c.Targets[0].ProcessStartHeader, c.Targets[1].ProcessStartHeader, c.Targets[2].ProcessStartHeader}
	if want := []string{"Process-Start-Time-Unix", "X-Pod-Start", ""}; !slices.Equal(got, want) {
		t.Fatalf("process start headers %q, want %q", got, want)
	}
}
