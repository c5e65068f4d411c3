package record

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/llmrec/llmrec/internal/engines"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/redact"
)

// Defaults of a recording.
const (
	DefaultInterval = 2 * time.Second
	DefaultMaxBody  = 64 << 20
)

// Config is a recording's configuration, from TOML and flags.
type Config struct {
	Interval Duration `toml:"interval" json:"interval"` // default cadence of every target
	Timeout  Duration `toml:"timeout" json:"timeout"`   // default per-scrape timeout; 0 = the target's interval
	Rotate   Duration `toml:"rotate" json:"rotate"`     // segment rotation; 0 = 60 s
	MaxBody  int64    `toml:"max_body_bytes" json:"max_body_bytes"`
	// Limits of parsing one page (see capture.Limits); 0 takes
	// capture.DefaultLimits'. A page over one is stored unparsed.
	MaxSeries          int   `toml:"max_series" json:"max_series"`
	MaxLabelValueBytes int   `toml:"max_label_value_bytes" json:"max_label_value_bytes"`
	MaxLabelBytes      int64 `toml:"max_label_bytes" json:"max_label_bytes"`
	// CompactEvery merges this many closed segments into one file (default
	// 10: ten-minute files at the default rotate); 1 keeps every segment.
	CompactEvery int `toml:"compact_every" json:"compact_every"`
	// FollowRedirects follows a redirect to the same scheme, host and port
	// (never elsewhere); by default a redirect is a row, not followed.
	FollowRedirects bool `toml:"follow_redirects" json:"follow_redirects"`
	// TLS holds the defaults of every https:// target's TLS options.
	TLS TLS `toml:"tls" json:"tls,omitzero"`
	// FileSD are Prometheus file_sd target files (globs) whose targets
	// join Targets when the config is validated (see filesd.go).
	FileSD []string `toml:"file_sd" json:"file_sd,omitempty"`
	// ResolveDNS is every target's default of resolve_dns (see
	// discovery.go): a target whose URL names a host is scraped once per
	// address the name resolves to, re-resolved every interval.
	ResolveDNS bool     `toml:"resolve_dns" json:"resolve_dns,omitempty"`
	Targets    []Target `toml:"target" json:"targets"`
}

// Target is one engine to scrape.
type Target struct {
	Name     string   `toml:"name" json:"name"`
	URL      string   `toml:"url" json:"url"`
	Engine   string   `toml:"engine" json:"engine,omitempty"` // a hint for analysis: vllm, llamacpp, sglang, tgi, trtllm, ...
	Interval Duration `toml:"interval" json:"interval"`
	Timeout  Duration `toml:"timeout" json:"timeout"`
	// Headers are sent with every request. In the manifest only the values
	// of headers known to be harmless (redact.Harmless) are kept; the
	// others are digests.
	Headers map[string]string `toml:"headers" json:"headers,omitempty"`
	// BearerTokenEnv names the environment variable holding a bearer token.
	// Only the name is ever written anywhere.
	BearerTokenEnv string     `toml:"bearer_token_env" json:"bearer_token_env,omitempty"`
	Endpoints      []Endpoint `toml:"endpoint" json:"endpoints,omitempty"`
	// FollowRedirects overrides the config's follow_redirects; nil before
	// Validate means "as the config says".
	FollowRedirects *bool `toml:"follow_redirects" json:"follow_redirects,omitempty"`
	// TLS of an https:// URL; empty fields take the config's (see TLS).
	TLS TLS `toml:"tls" json:"tls,omitzero"`
	// FileSD is the base name of the file_sd file that named the target
	// ("" for one of the config's own), Labels its group's labels.
	FileSD string            `toml:"-" json:"file_sd,omitempty"`
	Labels map[string]string `toml:"-" json:"labels,omitempty"`
	// ResolveDNS overrides the config's resolve_dns; nil before Validate
	// means "as the config says".
	ResolveDNS *bool `toml:"resolve_dns" json:"resolve_dns,omitempty"`
	// Host is the host name of a target made from one address of a name
	// (resolve_dns): sent as the Host header and verified (and sent as
	// SNI) as its TLS name, while the URL holds the address.
	Host string `toml:"-" json:"host,omitempty"`
	// ProcessStartHeader names a response header that carries the
	// engine's process start (or any value that changes only when it
	// restarts, such as an instance id a proxy adds): its change between
	// two answers is restart evidence to the analysis. "" for none: then
	// the header the target's engine sends by itself, if any
	// (engines.ProcessStartHeader: llama.cpp's Process-Start-Time-Unix),
	// which the analysis also reads unconfigured.
	ProcessStartHeader string `toml:"process_start_header" json:"process_start_header,omitempty"`
}

// follows reports whether the target's scrapes follow same-origin redirects.
func (t *Target) follows() bool { return t.FollowRedirects != nil && *t.FollowRedirects }

// Endpoint is an extra path captured beside /metrics, e.g. llama.cpp /slots.
type Endpoint struct {
	Path string `toml:"path" json:"path"`
	// Once captures it at start only; otherwise on the target's cadence.
	Once bool `toml:"once" json:"once,omitempty"`
}

// Duration is a time.Duration that reads "500ms"-style strings from TOML
// and writes them to JSON.
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("not a duration like \"500ms\" or \"2s\": %q", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// D is the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// LoadConfig reads a TOML configuration file. Errors name the file, the
// line where it is known, and the key.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return ParseConfig(b, path)
}

// ParseConfig decodes TOML text; file names it in errors.
func ParseConfig(text []byte, file string) (*Config, error) {
	var c Config
	md, err := toml.Decode(string(text), &c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %s", file, pe.Position.Line, pe.Message)
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		return nil, fmt.Errorf("%s:%d: unknown key %q", file, KeyLine(text, k), k.String())
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &c, nil
}

// KeyLine finds the line of a TOML key in text: the table header or the
// assignment of its last component (quoted or not). 0 when it cannot tell.
// Config errors use it to name the line of a key the decoder rejects.
func KeyLine(text []byte, k toml.Key) int {
	last := regexp.QuoteMeta(k[len(k)-1])
	assign := regexp.MustCompile(`^\s*("?)` + last + `("?)\s*=`)
	header := regexp.MustCompile(`^\s*\[\[?\s*` + regexp.QuoteMeta(k.String()) + `\s*\]`)
	for i, line := range strings.Split(string(text), "\n") {
		if assign.MatchString(line) || header.MatchString(line) {
			return i + 1
		}
	}
	return 0
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`)

// Validate checks values and fills defaults. It is called by ParseConfig
// and again after flags are merged.
func (c *Config) Validate() error {
	if c.Interval < 0 || c.Timeout < 0 || c.Rotate < 0 {
		return errors.New("interval, timeout and rotate must not be negative")
	}
	if c.Interval == 0 {
		c.Interval = Duration(DefaultInterval)
	}
	if time.Duration(c.Interval) < 10*time.Millisecond {
		return fmt.Errorf("interval %s is below 10ms", c.Interval.D())
	}
	if c.MaxBody < 0 {
		return fmt.Errorf("max_body_bytes %d is negative", c.MaxBody)
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.MaxBody > capture.MaxBodyBytes {
		return fmt.Errorf("max_body_bytes %d is over %d: a segment's page holds a whole body, and its readers refuse pages over %d MiB", c.MaxBody, capture.MaxBodyBytes, capture.MaxPageBytes>>20)
	}
	if c.MaxSeries < 0 || c.MaxLabelValueBytes < 0 || c.MaxLabelBytes < 0 {
		return errors.New("max_series, max_label_value_bytes and max_label_bytes must not be negative")
	}
	d := capture.DefaultLimits
	c.MaxSeries = cmp.Or(c.MaxSeries, d.MaxSeries)
	c.MaxLabelValueBytes = cmp.Or(c.MaxLabelValueBytes, d.MaxLabelValueBytes)
	c.MaxLabelBytes = cmp.Or(c.MaxLabelBytes, d.MaxLabelBytes)
	if c.CompactEvery < 0 {
		return fmt.Errorf("compact_every %d is negative", c.CompactEvery)
	}
	if c.CompactEvery == 0 {
		c.CompactEvery = capture.DefaultCompactEvery
	}
	targets, err := c.withFileSD()
	if err != nil {
		return err
	}
	c.Targets = targets
	seen := map[string]bool{}
	for i := range c.Targets {
		t := &c.Targets[i]
		where := fmt.Sprintf("target %d", i+1)
		if t.Name != "" {
			where = fmt.Sprintf("target %q", t.Name)
		}
		if t.FileSD != "" {
			where += " (from file_sd " + t.FileSD + ")"
		}
		if seen[t.Name] && namePattern.MatchString(t.Name) {
			return fmt.Errorf("%s: the name is used twice", where)
		}
		seen[t.Name] = true
		if err := c.checkTarget(t); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return checkCapacity(c.Targets)
}

// checkTarget checks one target and fills its defaults from the config.
// Targets that discovery finds while recording go through it too.
func (c *Config) checkTarget(t *Target) error {
	if !namePattern.MatchString(t.Name) {
		return fmt.Errorf("name %q must start with a letter or digit and hold only letters, digits and _.:-", t.Name)
	}
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q is not an http(s) URL", redact.URL(t.URL))
	}
	if err := t.checkTLS(u.Scheme, c.TLS); err != nil {
		return err
	}
	if t.Interval < 0 || t.Timeout < 0 {
		return errors.New("interval and timeout must not be negative")
	}
	if t.Interval == 0 {
		t.Interval = c.Interval
	}
	if time.Duration(t.Interval) < 10*time.Millisecond {
		return fmt.Errorf("interval %s is below 10ms", t.Interval.D())
	}
	if t.Timeout == 0 {
		t.Timeout = c.Timeout
	}
	if t.Timeout == 0 {
		t.Timeout = t.Interval
	}
	if time.Duration(t.Timeout) > capture.MaxTimeout {
		return fmt.Errorf("timeout %s is over %s", t.Timeout.D(), capture.MaxTimeout)
	}
	if t.FollowRedirects == nil {
		follow := c.FollowRedirects
		t.FollowRedirects = &follow
	}
	if t.ResolveDNS == nil {
		resolve := c.ResolveDNS
		t.ResolveDNS = &resolve
	}
	if t.BearerTokenEnv != "" {
		if _, ok := os.LookupEnv(t.BearerTokenEnv); !ok {
			return fmt.Errorf("bearer_token_env names %s, which is not set", t.BearerTokenEnv)
		}
	}
	// An engine that sends its process start by itself needs no config.
	if t.ProcessStartHeader == "" {
		t.ProcessStartHeader = engines.ProcessStartHeader(engines.NormalizeHint(t.Engine))
	}
	if h := t.ProcessStartHeader; h != "" && !headerName.MatchString(h) {
		return fmt.Errorf("process_start_header %q is not a header name", h)
	}
	for j, e := range t.Endpoints {
		if !strings.HasPrefix(e.Path, "/") {
			return fmt.Errorf("endpoint %d: path %q must start with /", j+1, e.Path)
		}
		if e.Path == "/metrics" || e.Path == u.Path {
			return fmt.Errorf("endpoint %d: %s is the target's own URL", j+1, e.Path)
		}
	}
	return nil
}

// headerName is an HTTP header name (RFC 9110's token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// Limits are the limits of parsing one page.
func (c *Config) Limits() capture.Limits {
	return capture.Limits{MaxSeries: c.MaxSeries, MaxLabelValueBytes: c.MaxLabelValueBytes, MaxLabelBytes: c.MaxLabelBytes}
}

// ParseTargetFlag reads a --target NAME=URL flag.
func ParseTargetFlag(s string) (Target, error) {
	name, u, ok := strings.Cut(s, "=")
	if !ok || name == "" || u == "" {
		return Target{}, fmt.Errorf("--target %q: want NAME=URL, e.g. vllm=http://127.0.0.1:8000/metrics", redact.Text(s))
	}
	return Target{Name: name, URL: u}, nil
}

// Redacted returns the configuration as it may be written down: URLs
// through redact.URL (no user information, no query value) and headers
// through redact.Headers (an allow-list; other values become digests).
func (c Config) Redacted() Config {
	out := c
	out.TLS = c.TLS.redacted()
	// A file_sd pattern's folder may name a user, as a TLS file's may.
	out.FileSD = nil
	for _, p := range c.FileSD {
		out.FileSD = append(out.FileSD, filepath.Base(p))
	}
	out.Targets = make([]Target, len(c.Targets))
	for i, t := range c.Targets {
		t.URL = redact.URL(t.URL)
		t.Headers = redact.Headers(t.Headers)
		t.Labels = redact.Labels(t.Labels)
		t.TLS = t.TLS.redacted()
		t.Endpoints = slices.Clone(t.Endpoints)
		for j := range t.Endpoints {
			t.Endpoints[j].Path = redact.URL(t.Endpoints[j].Path)
		}
		out.Targets[i] = t
	}
	return out
}
