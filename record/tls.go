package record

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// TLS is how a target's https:// URL is reached: the authority that signs
// its certificate, the client certificate of mTLS, the name to verify.
// Each field left empty in a target takes the config's [tls] default.
//
// Rules:
//   - without ca_file the system's roots verify the server;
//   - cert_file and key_file come together (mTLS) or not at all;
//   - server_name replaces the URL's host as the name verified (and sent
//     as SNI); the connection still goes to the URL's host;
//   - insecure_skip_verify checks nothing: it is warned on stderr at start
//     and written as a warning into the manifest;
//   - the manifest never holds a path (a path may name a user) nor a key:
//     ca_file and cert_file are written as their base name and the SHA-256
//     of their content, key_file as its base name only.
type TLS struct {
	CAFile             string `toml:"ca_file" json:"ca_file,omitempty"`
	CertFile           string `toml:"cert_file" json:"cert_file,omitempty"`
	KeyFile            string `toml:"key_file" json:"key_file,omitempty"`
	ServerName         string `toml:"server_name" json:"server_name,omitempty"`
	InsecureSkipVerify *bool  `toml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"`
}

// IsZero reports whether no TLS option is set.
func (c TLS) IsZero() bool {
	return c.CAFile == "" && c.CertFile == "" && c.KeyFile == "" && c.ServerName == "" && c.InsecureSkipVerify == nil
}

// insecure reports whether certificates are not checked.
func (c TLS) insecure() bool { return c.InsecureSkipVerify != nil && *c.InsecureSkipVerify }

// withDefaults fills the fields left empty from d.
func (c TLS) withDefaults(d TLS) TLS {
	if c.CAFile == "" {
		c.CAFile = d.CAFile
	}
	if c.CertFile == "" && c.KeyFile == "" {
		c.CertFile, c.KeyFile = d.CertFile, d.KeyFile
	}
	if c.ServerName == "" {
		c.ServerName = d.ServerName
	}
	if c.InsecureSkipVerify == nil {
		c.InsecureSkipVerify = d.InsecureSkipVerify
	}
	return c
}

// config builds the crypto/tls configuration, reading the files. Errors
// say which option and file failed, by its base name.
func (c TLS) config() (*tls.Config, error) {
	out := &tls.Config{ServerName: c.ServerName, InsecureSkipVerify: c.insecure(), MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls ca_file: %w", plainFileError(err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca_file %s: no PEM certificate in it", filepath.Base(c.CAFile))
		}
		out.RootCAs = pool
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("tls cert_file and key_file go together: give both for a client certificate, or neither")
	}
	if c.CertFile != "" {
		// LoadX509KeyPair's errors name no path and no key material.
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls cert_file %s / key_file %s: %w", filepath.Base(c.CertFile), filepath.Base(c.KeyFile), plainFileError(err))
		}
		out.Certificates = []tls.Certificate{cert}
	}
	return out, nil
}

// plainFileError drops the path from a file error (it may name a user),
// keeping its base name and the reason.
func plainFileError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", filepath.Base(pe.Path), pe.Err)
	}
	return err
}

// redacted is c as the manifest holds it (see TLS).
func (c TLS) redacted() TLS {
	c.CAFile = describeFile(c.CAFile, true)
	c.CertFile = describeFile(c.CertFile, true)
	c.KeyFile = describeFile(c.KeyFile, false)
	return c
}

// describeFile names a file without its folder, with the SHA-256 of its
// content when digest is set: which certificate was used, comparable
// between runs, without the path.
func describeFile(path string, digest bool) string {
	if path == "" {
		return ""
	}
	base := filepath.Base(path)
	if !digest {
		return base
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return base + " (unreadable)"
	}
	sum := sha256.Sum256(b)
	return base + " sha256:" + hex.EncodeToString(sum[:])
}

// targetClients are the HTTP clients of a run's targets.
type targetClients struct {
	shared *http.Client   // of the targets without TLS options
	of     []*http.Client // of each target
}

// clients returns the HTTP client of each target: targets without a TLS
// option share one; each other target has its own transport.
func clients(targets []Target) (targetClients, error) {
	out := targetClients{shared: newClient(), of: make([]*http.Client, len(targets))}
	for i, t := range targets {
		c, err := clientFor(&t, out.shared)
		if err != nil {
			return targetClients{}, err
		}
		out.of[i] = c
	}
	return out, nil
}

// clientFor is the HTTP client of one target: shared when it has no TLS
// option, else its own.
func clientFor(t *Target, shared *http.Client) (*http.Client, error) {
	if t.TLS.IsZero() {
		return shared, nil
	}
	tc, err := t.TLS.config()
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", t.Name, err)
	}
	c := newClient()
	c.Transport.(*http.Transport).TLSClientConfig = tc
	return c, nil
}

// insecureWarnings are the warnings of targets whose certificates are not
// checked, said on stderr at start and kept in the manifest.
func insecureWarnings(targets []Target) []string {
	var out []string
	for _, t := range targets {
		if t.TLS.insecure() {
			out = append(out, fmt.Sprintf("target %q: tls insecure_skip_verify is on: its server's certificate is not checked, so anyone between may answer for it", t.Name))
		}
	}
	return out
}

// describeTLS says in plain words why a TLS handshake failed, nil when
// err is no TLS failure. The Go error is kept after it.
func describeTLS(err error) error {
	var (
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		record   tls.RecordHeaderError
		why      string
	)
	// The server's refusals arrive as alerts, which crypto/tls reports as
	// "remote error: tls: ALERT" of an unexported type.
	msg := err.Error()
	switch {
	case errors.As(err, &unknown):
		why = "the server's certificate is signed by an unknown authority (give the authority's certificate as tls ca_file)"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		why = "the server's certificate has expired or is not valid yet"
	case errors.As(err, &invalid):
		why = "the server's certificate is not valid"
	case errors.As(err, &hostname):
		why = fmt.Sprintf("the server's certificate is not valid for the name %q (it names %s; set tls server_name to the name it has)", hostname.Host, certNames(hostname.Certificate))
	case strings.Contains(msg, "remote error: tls: certificate required"), strings.Contains(msg, "remote error: tls: handshake failure"):
		// certificate_required (TLS 1.3), handshake_failure (TLS 1.2).
		why = "the server refused the handshake: it requires a client certificate (give tls cert_file and key_file)"
	case strings.Contains(msg, "remote error: tls: "):
		why = "the server refused the handshake (our client certificate, if any, was not accepted)"
	case errors.As(err, &record), strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		why = "the server did not answer in TLS (is it plain http://?)"
	case strings.Contains(msg, "tls: "):
		why = "the TLS handshake failed"
	default:
		return nil
	}
	return fmt.Errorf("TLS: %s: %w", why, err)
}

// certNames lists the names a certificate is valid for.
func certNames(c *x509.Certificate) string {
	if c == nil {
		return "no name"
	}
	var names []string
	names = append(names, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return "no subject alternative name"
	}
	return strings.Join(names, ", ")
}

// checkTLS fills the target's TLS options from the defaults d when its
// URL is https and checks that they load; TLS options of its own on an
// http URL are refused (they would silently do nothing).
func (t *Target) checkTLS(scheme string, d TLS) error {
	if scheme != "https" {
		if !t.TLS.IsZero() {
			return errors.New("tls options are set but the url is not https://")
		}
		return nil
	}
	t.TLS = t.TLS.withDefaults(d)
	if t.TLS.IsZero() {
		return nil
	}
	_, err := t.TLS.config()
	return err
}
