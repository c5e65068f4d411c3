package redact

import (
	"errors"
	"maps"
	"net/url"
	"strings"
	"testing"
)

// A URL keeps scheme, host, port and path; user information goes, every
// query value and a fragment are replaced.
func TestURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://127.0.0.1:8000/metrics", "http://127.0.0.1:8000/metrics"},
		{"http://TOKEN@host/metrics", "http://host/metrics"},
		{"http://user:pass@host:9/metrics", "http://host:9/metrics"},
		{"https://h/m?token=abc", "https://h/m?token=<redacted>"},
		{"https://h/m?x=plain&sig=abc&pass=p&debug", "https://h/m?x=<redacted>&sig=<redacted>&pass=<redacted>&debug"},
		{"https://h/m?token=", "https://h/m?token=<redacted>"},
		{"https://h/m#access_token=abc", "https://h/m#<redacted>"},
		{"http://[::1]:8/m?k=v", "http://[::1]:8/m?k=<redacted>"},
		{"/relative?token=abc", "/relative?token=<redacted>"},
		{"http://us%zzer@h/m?token=abc", "http://h/m?token=<redacted>"}, // url.Parse refuses it
		{"http://h/a b?token=abc", "http://h/a b?token=<redacted>"},     // kept as written
		{"HTTP://a@b@H/p#", "HTTP://H/p#"},
		{"//TOKEN@h/x?k=v", "//h/x?k=<redacted>"},
	}
	for _, c := range cases {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
		if again := URL(URL(c.in)); again != URL(c.in) {
			t.Errorf("URL not idempotent on %q: %q then %q", c.in, URL(c.in), again)
		}
	}
}

// Text finds URLs anywhere: the quoted form of *url.Error, bare URLs,
// and user information before a host outside a URL.
func TestText(t *testing.T) {
	ue := &url.Error{Op: "Get", URL: "http://TOKEN@127.0.0.1:9/metrics?token=QT&x=\"q\\\" s", Err: errors.New("dial tcp 127.0.0.1:9: connect: connection refused")}
	cases := []struct{ in, want string }{
		{ue.Error(), `Get "http://127.0.0.1:9/metrics?token=<redacted>&x=<redacted>": dial tcp 127.0.0.1:9: connect: connection refused`},
		{`timeout after 1s: Get "http://u:p@h/m?sig=S": context deadline exceeded`, `timeout after 1s: Get "http://h/m?sig=<redacted>": context deadline exceeded`},
		{"redirect to http://h2:8/x?token=T (another origin)", "redirect to http://h2:8/x?token=<redacted> (another origin)"},
		{"proxy user:secret@10.0.0.1:3128 refused", "proxy 10.0.0.1:3128 refused"},
		{"bad url 'ftp://a:b@h/x?pass=P'", "bad url 'ftp://h/x?pass=<redacted>'"},
		{"no url here: HTTP 404 Not Found", "no url here: HTTP 404 Not Found"},
		{"two: http://a/?token=T https://b/?sig=S\tend", "two: http://a/?token=<redacted> https://b/?sig=<redacted>\tend"},
		{"glued: http://a/?token=T,https://b/?sig=S", "glued: http://a/?token=<redacted>"}, // the second is in the first's value
		{`unterminated "http://h/?pass=P`, `unterminated "http://h/?pass=<redacted>`},
		{"(url=http://TOKEN@h:1/m)", "(url=http://h:1/m)"},
		{"://nothing ://", "://nothing ://"},
		{"", ""},
	}
	for _, c := range cases {
		got := Text(c.in)
		if got != c.want {
			t.Errorf("Text(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
		if again := Text(got); again != got {
			t.Errorf("Text not idempotent: %q then %q", got, again)
		}
		for _, secret := range []string{"TOKEN", "QT", "secret", ":p@", "=S", "=T", "a:b", "=P"} {
			if strings.Contains(got, secret) {
				t.Errorf("Text(%q) = %q keeps %q", c.in, got, secret)
			}
		}
	}
}

// Only headers known to be harmless keep their values; every other one,
// an unknown one included, becomes a digest that equal values share.
func TestHeaders(t *testing.T) {
	in := map[string]string{
		"Accept": "text/plain", "user-agent": "bench/1", "Content-Type": "text/plain",
		"Authorization": "Bearer AUTHV", "X-Api-Key": "APIKEYV", "X-Credential": "CREDV",
		"X-Signature": "SIGV", "X-Session-Id": "SESSV", "X-Pass": "PASSV", "X-Bench": "run-7", "X-Same": "APIKEYV",
	}
	out := Headers(in)
	for k, v := range in {
		got := out[k]
		switch k {
		case "Accept", "user-agent", "Content-Type":
			if got != v {
				t.Errorf("%s: %q, want it kept", k, got)
			}
		default:
			if got == v || strings.Contains(got, v) || !strings.HasPrefix(got, "<redacted sha256:") {
				t.Errorf("%s: %q, want a digest", k, got)
			}
		}
	}
	if out["X-Api-Key"] != out["X-Same"] || out["X-Api-Key"] == out["X-Credential"] {
		t.Errorf("digests do not compare values: %v", out)
	}
	if again := Headers(out); again["X-Api-Key"] != out["X-Api-Key"] {
		t.Errorf("Headers not idempotent: %q then %q", out["X-Api-Key"], again["X-Api-Key"])
	}
	if in["X-Api-Key"] != "APIKEYV" {
		t.Error("Headers changed its argument")
	}
	if Headers(nil) != nil {
		t.Error("Headers(nil) is not nil")
	}
}

func BenchmarkText(b *testing.B) {
	msg := `timeout after 2s: Get "http://TOKEN@127.0.0.1:8000/metrics?token=abc": context deadline exceeded`
	b.ReportAllocs()
	for b.Loop() {
		Text(msg)
	}
}

// Tree redacts a decoded manifest config: URLs in any string, header
// values by the allow-list, other values left alone.
func TestTree(t *testing.T) {
	in := map[string]any{
		"interval": "1s",
		"targets": []any{map[string]any{
			"url":     "http://TOKEN@h/m?sig=SIGV",
			"headers": map[string]any{"X-Pass": "PASSV", "Accept": "text/plain"},
			"n":       float64(3),
		}},
	}
	out := Tree(in).(map[string]any)
	tg := out["targets"].([]any)[0].(map[string]any)
	h := tg["headers"].(map[string]any)
	if out["interval"] != "1s" || tg["url"] != "http://h/m?sig=<redacted>" || tg["n"] != float64(3) ||
		h["Accept"] != "text/plain" || h["X-Pass"] != Digest("PASSV") {
		t.Errorf("Tree: %v", out)
	}
	if in["targets"].([]any)[0].(map[string]any)["url"] != "http://TOKEN@h/m?sig=SIGV" {
		t.Error("Tree changed its argument")
	}
}

// Text and URL never panic and are idempotent on any input.
func FuzzText(f *testing.F) {
	for _, s := range []string{
		`Get "http://u:p@h/m?token=x": dial tcp 1.2.3.4:5: refused`,
		"http://TOKEN@h/?a=b#c", "x user:pass@host:1 y", `"http://\"a?b=c`, "a://b@c/d?e=f&g",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := Text(s)
		if twice := Text(once); twice != once {
			t.Errorf("Text(%q) = %q, then %q", s, once, twice)
		}
		if u := URL(s); URL(u) != u {
			t.Errorf("URL(%q) = %q, then %q", s, u, URL(u))
		}
	})
}

// A label whose name looks like a credential's is a digest; a URL in any
// label is redacted; other labels stay; Tree does the same to a "labels"
// object of an older manifest; both are idempotent.
func TestLabels(t *testing.T) {
	in := map[string]string{"api_key": "hunter2", "X-Auth-Token": "hunter2", "db_password": "hunter2",
		"dashboard": "https://u:hunter2@g.example/d?token=hunter2", "pool": "a"}
	out := Labels(in)
	for k, v := range out {
		if strings.Contains(v, "hunter2") {
			t.Errorf("%s = %q", k, v)
		}
	}
	if out["pool"] != "a" || out["dashboard"] != "https://g.example/d?token="+Mark {
		t.Errorf("kept labels: %v", out)
	}
	if again := Labels(out); !maps.Equal(again, out) {
		t.Errorf("twice: %v, once: %v", again, out)
	}
	tree := Tree(map[string]any{"targets": []any{map[string]any{"labels": map[string]any{"api_key": "hunter2", "pool": "a"}}}})
	lab := tree.(map[string]any)["targets"].([]any)[0].(map[string]any)["labels"].(map[string]any)
	if lab["api_key"] != Digest("hunter2") || lab["pool"] != "a" {
		t.Errorf("Tree: %v", lab)
	}
}
