package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/record/tlstest"
)

// TLS through the command: mTLS records and exits 0; each failed
// handshake ends with exit 1 and a one-line error naming the target and
// the failure in plain words, said on stderr at the first scrape too; a
// certificate file that does not load is the caller's mistake (exit 2).
func TestRecordTLS(t *testing.T) {
	pki := tlstest.New(t)
	good := pki.Issue(t, tlstest.Options{Name: "server", IPs: tlstest.Loopback})
	expired := pki.Issue(t, tlstest.Options{Name: "expired", IPs: tlstest.Loopback, Expired: true})
	other := pki.Issue(t, tlstest.Options{Name: "other", DNSNames: []string{"engine.internal"}})
	client := pki.Issue(t, tlstest.Options{Name: "client", Client: true})
	const page = "# TYPE up gauge\nup 1\n"
	mtls := []string{"--tls-ca-file", pki.CAFile, "--tls-cert-file", client.CertFile, "--tls-key-file", client.KeyFile}
	cases := []struct {
		name   string
		server tlstest.Pair
		mTLS   bool
		flags  []string
		want   string // "" for exit 0
	}{
		{"mtls", good, true, mtls, ""},
		{"server name", other, false, []string{"--tls-ca-file", pki.CAFile, "--tls-server-name", "engine.internal"}, ""},
		{"unknown authority", good, false, nil, "TLS: the server's certificate is signed by an unknown authority"},
		{"expired", expired, false, mtls, "TLS: the server's certificate has expired or is not valid yet"},
		{"wrong name", other, false, mtls, `TLS: the server's certificate is not valid for the name "127.0.0.1"`},
		{"no client certificate", good, true, mtls[:2], "TLS: the server refused the handshake: it requires a client certificate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := pki.Serve(t, c.server, c.mTLS, page).URL + "/metrics"
			args := append([]string{"record", "-o", filepath.Join(t.TempDir(), "run"), "--duration", "300ms", "--interval", "100ms",
				"--timeout", "2s", "--target", "eng=" + url}, c.flags...)
			_, stderr, err := runCLI(args...)
			if c.want == "" {
				if err != nil || strings.Contains(stderr, "warning") {
					t.Fatalf("%v\n%s", err, stderr)
				}
				return
			}
			if err == nil || errors.Is(err, errUsage) || strings.Contains(err.Error(), "\n") ||
				!strings.Contains(err.Error(), "1 of 1 target(s) never answered: eng ("+url+": ") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want exit 1 naming eng and %q", err, c.want)
			}
			if !strings.Contains(stderr, "warning: eng ("+url+"): first scrape failed: ") || !strings.Contains(stderr, c.want) {
				t.Errorf("stderr:\n%s", stderr)
			}
		})
	}
	t.Run("insecure", func(t *testing.T) {
		url := pki.Serve(t, other, false, page).URL + "/metrics"
		_, stderr, err := runCLI("record", "-o", filepath.Join(t.TempDir(), "run"), "--duration", "300ms", "--interval", "100ms",
			"--timeout", "2s", "--target", "eng="+url, "--tls-insecure-skip-verify")
		if err != nil || !strings.Contains(stderr, `warning: target "eng": tls insecure_skip_verify is on`) {
			t.Fatalf("%v\n%s", err, stderr)
		}
	})
	t.Run("bad file", func(t *testing.T) {
		_, _, err := runCLI("record", "-o", filepath.Join(t.TempDir(), "run"), "--duration", "300ms",
			"--target", "eng=https://127.0.0.1:1/metrics", "--tls-ca-file", client.KeyFile)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), `target "eng": tls ca_file client-key.pem: no PEM certificate in it`) {
			t.Fatalf("error %v", err)
		}
	})
}
