// Package tlsclient builds the TLS configuration of a client of an https target from the
// config's target.tls (schemas.TargetTLS): it reads the CA, certificate and key files and says
// which setting is wrong (*Error). replay checks the settings with it before a run; capture's
// workers and its metrics scrape connect with it.
package tlsclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/wirebench/wirebench/schemas"
)

// Error is a target.tls setting that cannot be used; Field is its key (ca_file, ...).
type Error struct {
	Field string
	Err   error
}

func (e *Error) Error() string { return "target.tls." + e.Field + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Config loads the files t names and returns the TLS configuration of a client of the target
// (TLS 1.2 or 1.3; the client sets ALPN and the session cache). Errors are *Error.
func Config(t schemas.TargetTLS) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, &Error{"ca_file", err}
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, &Error{"ca_file", fmt.Errorf("no PEM certificate in %s", t.CAFile)}
		}
	}
	switch {
	case t.CertFile == "" && t.KeyFile == "":
	case t.KeyFile == "":
		return nil, &Error{"key_file", errors.New("required with cert_file")}
	case t.CertFile == "":
		return nil, &Error{"cert_file", errors.New("required with key_file")}
	default:
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, &Error{"cert_file", err}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
