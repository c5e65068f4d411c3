package record

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/tlstest"
)

const tlsPage = "# TYPE up gauge\nup 1\n"

// recordTLS records one target for a few ticks and returns its metrics
// rows, what was warned and the session's manifest.
func recordTLS(t *testing.T, url string, tc TLS) ([]capture.Scrape, string, capture.Manifest) {
	t.Helper()
	dir := t.TempDir()
	// A handshake under a loaded host (or -race) can take longer than a
	// tick: the timeout is longer, and missed ticks are not looked at.
	cfg := &Config{Interval: Duration(100 * time.Millisecond), Timeout: Duration(2 * time.Second), Targets: []Target{{Name: "eng", URL: url, TLS: tc}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	if _, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 350 * time.Millisecond, Warnings: &warn}); err != nil {
		t.Fatal(err)
	}
	var rows []capture.Scrape
	for _, r := range readRows(t, dir) {
		if r.Endpoint == capture.EndpointMetrics && r.Outcome != capture.OutcomeMissed {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	run, err := capture.Open(dir)
	if err != nil || len(run.Manifests) != 1 {
		t.Fatalf("manifest: %v", err)
	}
	return rows, warn.String(), run.Manifests[0]
}

// TLS and mTLS end to end on loopback: a server verified by the
// configured authority is recorded; each way a handshake fails is a row
// whose error says which in plain words, and the first is warned naming
// the target.
func TestTLSEndToEnd(t *testing.T) {
	pki := tlstest.New(t)
	good := pki.Issue(t, tlstest.Options{Name: "server", IPs: tlstest.Loopback})
	expired := pki.Issue(t, tlstest.Options{Name: "expired", IPs: tlstest.Loopback, Expired: true})
	other := pki.Issue(t, tlstest.Options{Name: "other", DNSNames: []string{"engine.internal"}})
	client := pki.Issue(t, tlstest.Options{Name: "client", Client: true})
	withClient := TLS{CAFile: pki.CAFile, CertFile: client.CertFile, KeyFile: client.KeyFile}
	stranger := tlstest.New(t).Issue(t, tlstest.Options{Name: "stranger", Client: true})

	serve := func(server tlstest.Pair, mTLS bool) func(t *testing.T) string {
		return func(t *testing.T) string { return pki.Serve(t, server, mTLS, tlsPage).URL + "/metrics" }
	}
	plain := func(t *testing.T) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, tlsPage) }))
		t.Cleanup(srv.Close)
		return strings.Replace(srv.URL, "http://", "https://", 1) + "/metrics"
	}
	cases := []struct {
		name  string
		serve func(t *testing.T) string
		tls   TLS
		want  string // in the error of every row; "" for ok rows
	}{
		{"tls", serve(good, false), TLS{CAFile: pki.CAFile}, ""},
		{"mtls", serve(good, true), withClient, ""},
		{"server name", serve(other, false), TLS{CAFile: pki.CAFile, ServerName: "engine.internal"}, ""},
		{"unknown authority", serve(good, false), TLS{}, "TLS: the server's certificate is signed by an unknown authority"},
		{"expired", serve(expired, false), TLS{CAFile: pki.CAFile}, "TLS: the server's certificate has expired or is not valid yet"},
		{"wrong name", serve(other, false), TLS{CAFile: pki.CAFile}, `TLS: the server's certificate is not valid for the name "127.0.0.1" (it names engine.internal; set tls server_name`},
		{"no client certificate", serve(good, true), TLS{CAFile: pki.CAFile}, "TLS: the server refused the handshake: it requires a client certificate"},
		{"client certificate of another authority", serve(good, true), TLS{CAFile: pki.CAFile, CertFile: stranger.CertFile, KeyFile: stranger.KeyFile},
			"TLS: the server refused the handshake (our client certificate, if any, was not accepted)"},
		{"plain http", plain, TLS{CAFile: pki.CAFile}, "TLS: the server did not answer in TLS"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, warned, _ := recordTLS(t, c.serve(t), c.tls)
			for _, r := range rows {
				got := ""
				if r.Error != nil {
					got = *r.Error
				}
				if c.want == "" && r.Outcome != capture.OutcomeOK {
					t.Fatalf("seq %d: %s %s", r.Seq, r.Outcome, got)
				}
				if c.want != "" && (r.Outcome != capture.OutcomeError || !strings.Contains(got, c.want)) {
					t.Fatalf("seq %d: %s %q, want an error with %q", r.Seq, r.Outcome, got, c.want)
				}
			}
			if c.want != "" && !strings.Contains(warned, "warning: eng (") || c.want == "" && warned != "" {
				t.Errorf("warned %q", warned)
			}
		})
	}
}

// insecure_skip_verify records a server no authority vouches for, and
// says so on stderr at start and in the manifest. The manifest names the
// files used by base name (and digest for certificates), never by path,
// and no output holds the client key.
func TestTLSInsecureWarnsAndManifestHoldsNoPath(t *testing.T) {
	pki := tlstest.New(t)
	srv := pki.Serve(t, pki.Issue(t, tlstest.Options{Name: "server", IPs: tlstest.Loopback}), true, tlsPage)
	client := pki.Issue(t, tlstest.Options{Name: "client", Client: true})
	yes := true
	dir := t.TempDir()
	cfg := &Config{Interval: Duration(100 * time.Millisecond), Timeout: Duration(2 * time.Second), Targets: []Target{{Name: "eng", URL: srv.URL + "/metrics",
		TLS: TLS{CertFile: client.CertFile, KeyFile: client.KeyFile, InsecureSkipVerify: &yes}}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	if _, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 250 * time.Millisecond, Warnings: &warn}); err != nil {
		t.Fatal(err)
	}
	for _, r := range readRows(t, dir) {
		if r.Endpoint == capture.EndpointMetrics && r.Outcome != capture.OutcomeOK && r.Outcome != capture.OutcomeMissed {
			t.Fatalf("seq %d: %s", r.Seq, r.Outcome)
		}
	}
	const w = `target "eng": tls insecure_skip_verify is on`
	if !strings.HasPrefix(warn.String(), "warning: "+w) {
		t.Errorf("stderr %q", warn.String())
	}
	run, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Manifests[0]
	if len(m.Warnings) != 1 || !strings.HasPrefix(m.Warnings[0], w) {
		t.Errorf("manifest warnings %q", m.Warnings)
	}
	manifest, err := os.ReadFile(capture.ManifestPath(dir, m.RunID))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"cert_file": "client.pem sha256:`, `"key_file": "client-key.pem"`} {
		if !bytes.Contains(manifest, []byte(want)) {
			t.Errorf("manifest lacks %s:\n%s", want, manifest)
		}
	}
	keyLine := bytes.Split(client.KeyPEM, []byte("\n"))[1]
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte(pki.Dir)) || bytes.Contains(b, keyLine) {
			t.Errorf("%s holds the folder of the certificates or the key", d.Name())
		}
		return nil
	})
}

// A TLS file that does not load is refused at validation, naming the
// target and the file by its base name; TLS options on an http URL too.
func TestTLSConfigErrors(t *testing.T) {
	pki := tlstest.New(t)
	client := pki.Issue(t, tlstest.Options{Name: "client", Client: true})
	missing := filepath.Join(pki.Dir, "nope.pem")
	cases := []struct {
		url  string
		tls  TLS
		want string
	}{
		{"https://127.0.0.1:1/metrics", TLS{CAFile: missing}, `target "eng": tls ca_file: nope.pem: no such file`},
		{"https://127.0.0.1:1/metrics", TLS{CAFile: client.KeyFile}, `target "eng": tls ca_file client-key.pem: no PEM certificate in it`},
		{"https://127.0.0.1:1/metrics", TLS{CertFile: client.CertFile}, `target "eng": tls cert_file and key_file go together`},
		{"https://127.0.0.1:1/metrics", TLS{CertFile: client.CertFile, KeyFile: pki.CAFile}, `target "eng": tls cert_file client.pem / key_file ca.pem: `},
		{"http://127.0.0.1:1/metrics", TLS{CAFile: pki.CAFile}, `target "eng": tls options are set but the url is not https://`},
	}
	for _, c := range cases {
		cfg := &Config{Targets: []Target{{Name: "eng", URL: c.url, TLS: c.tls}}}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), pki.Dir) {
			t.Errorf("%+v: %v, want %q without the folder", c.tls, err, c.want)
		}
	}
}

// The config's [tls] table is the default of every https target; a
// target's own fields win, and an http target takes none.
func TestTLSDefaults(t *testing.T) {
	cfg, err := ParseConfig([]byte(`
[tls]
server_name = "engine.internal"
insecure_skip_verify = true
[[target]]
name = "a"
url = "https://127.0.0.1:1/metrics"
[[target]]
name = "b"
url = "https://127.0.0.1:2/metrics"
tls = { server_name = "b.internal", insecure_skip_verify = false }
[[target]]
name = "c"
url = "http://127.0.0.1:3/metrics"
`), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := cfg.Targets[0].TLS, cfg.Targets[1].TLS, cfg.Targets[2].TLS
	if a.ServerName != "engine.internal" || !a.insecure() || b.ServerName != "b.internal" || b.insecure() || !c.IsZero() {
		t.Errorf("a %+v b %+v c %+v", a, b, c)
	}
	if got := insecureWarnings(cfg.Targets); len(got) != 1 || !strings.Contains(got[0], `"a"`) {
		t.Errorf("warnings %q", got)
	}
}
