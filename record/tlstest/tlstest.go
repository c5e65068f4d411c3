// Package tlstest makes the certificates of TLS tests: a certificate
// authority, server certificates for 127.0.0.1 (valid, expired, for
// another name) and a client certificate, written as PEM files, and
// loopback https servers that use them. It is a test helper.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a test authority and the certificates it signed, each as PEM
// files in Dir.
type PKI struct {
	Dir    string
	CAFile string // the authority's certificate
	pool   *x509.CertPool
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

// Pair is a certificate and its key, as files and loaded.
type Pair struct {
	CertFile, KeyFile string
	KeyPEM            []byte
	Cert              tls.Certificate
}

// New makes an authority in a fresh temporary folder.
func New(t testing.TB) *PKI {
	t.Helper()
	p := &PKI{Dir: t.TempDir(), serial: 1}
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: "llmrec test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, err = x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p.caKey = key
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.ca)
	p.CAFile = filepath.Join(p.Dir, "ca.pem")
	write(t, p.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return p
}

// Options of a certificate.
type Options struct {
	Name     string   // file base name
	IPs      []net.IP // subject alternative names
	DNSNames []string
	Expired  bool // valid until an hour ago
	Client   bool // for client authentication (else server)
}

// Issue signs a certificate and writes NAME.pem and NAME-key.pem.
func (p *PKI) Issue(t testing.TB, o Options) Pair {
	t.Helper()
	key := newKey(t)
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: o.Name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: o.IPs, DNSNames: o.DNSNames, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if o.Client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if o.Expired {
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})
	pr := Pair{CertFile: filepath.Join(p.Dir, o.Name+".pem"), KeyFile: filepath.Join(p.Dir, o.Name+"-key.pem"), KeyPEM: keyPEM}
	write(t, pr.CertFile, certPEM)
	write(t, pr.KeyFile, keyPEM)
	pr.Cert, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// Loopback is the name of a server certificate valid for 127.0.0.1.
var Loopback = []net.IP{net.IPv4(127, 0, 0, 1)}

// Serve starts an https server on 127.0.0.1 presenting cert and serving
// body; with mTLS it requires a client certificate signed by the
// authority. It is closed when the test ends. Handshake errors are not
// logged (the failures are the tests' point).
func (p *PKI) Serve(t testing.TB, cert Pair, mTLS bool, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert.Cert}}
	if mTLS {
		srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
		srv.TLS.ClientCAs = p.pool
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func write(t testing.TB, path string, b []byte) {
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
