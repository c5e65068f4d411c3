package main

import (
	"flag"

	"github.com/llmrec/llmrec/record"
)

// tlsFlags are record's --tls-* flags: the config's [tls] defaults, set
// for every target (a target's own value of a flag given is dropped, as
// --interval does).
type tlsFlags struct {
	ca, cert, key, serverName *string
	insecure                  *bool
}

func addTLSFlags(fs *flag.FlagSet) tlsFlags {
	return tlsFlags{
		ca:         fs.String("tls-ca-file", "", "PEM file of the authority that signs the https targets' certificates (default: the system's)"),
		cert:       fs.String("tls-cert-file", "", "PEM client certificate for mTLS (with --tls-key-file)"),
		key:        fs.String("tls-key-file", "", "PEM key of --tls-cert-file; never copied into any output"),
		serverName: fs.String("tls-server-name", "", "name to verify on the targets' certificates instead of the URL's host"),
		insecure:   fs.Bool("tls-insecure-skip-verify", false, "do not check the targets' certificates (warned on stderr and in the manifest)"),
	}
}

// apply puts the flags given (set) into cfg.
func (f tlsFlags) apply(cfg *record.Config, set map[string]bool) {
	for i := range cfg.Targets {
		t := &cfg.Targets[i].TLS
		if set["tls-ca-file"] {
			t.CAFile = ""
		}
		if set["tls-cert-file"] || set["tls-key-file"] {
			t.CertFile, t.KeyFile = "", ""
		}
		if set["tls-server-name"] {
			t.ServerName = ""
		}
		if set["tls-insecure-skip-verify"] {
			t.InsecureSkipVerify = nil
		}
	}
	if set["tls-ca-file"] {
		cfg.TLS.CAFile = *f.ca
	}
	if set["tls-cert-file"] || set["tls-key-file"] {
		cfg.TLS.CertFile, cfg.TLS.KeyFile = *f.cert, *f.key
	}
	if set["tls-server-name"] {
		cfg.TLS.ServerName = *f.serverName
	}
	if set["tls-insecure-skip-verify"] {
		v := *f.insecure
		cfg.TLS.InsecureSkipVerify = &v
	}
}
