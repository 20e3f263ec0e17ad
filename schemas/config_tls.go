package schemas

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TargetTLS configures the connections to an https target (target.tls). The files are PEM;
// relative paths are taken from the config file's directory. Zero: the system's CAs (and
// SSL_CERT_FILE), the URL's host as the server name, no client certificate.
type TargetTLS struct {
	CAFile             string `yaml:"ca_file" json:"ca_file,omitempty"`                           // CAs to trust instead of the system's
	ServerName         string `yaml:"server_name" json:"server_name,omitempty"`                   // name the certificate must hold (and SNI), instead of the URL's host
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"` // accept any certificate (tests only)
	CertFile           string `yaml:"cert_file" json:"cert_file,omitempty"`                       // client certificate for mutual TLS, with key_file
	KeyFile            string `yaml:"key_file" json:"key_file,omitempty"`                         // its private key
}

// TLSError is a target.tls setting that cannot be used; Field is its key (ca_file, ...).
type TLSError struct {
	Field string
	Err   error
}

func (e *TLSError) Error() string { return "target.tls." + e.Field + ": " + e.Err.Error() }
func (e *TLSError) Unwrap() error { return e.Err }

// ClientConfig loads the files and returns the TLS configuration of a client of the target
// (TLS 1.2 or 1.3; the client sets ALPN and the session cache). Errors are *TLSError.
func (t TargetTLS) ClientConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, &TLSError{"ca_file", err}
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, &TLSError{"ca_file", fmt.Errorf("no PEM certificate in %s", t.CAFile)}
		}
	}
	switch {
	case t.CertFile == "" && t.KeyFile == "":
	case t.KeyFile == "":
		return nil, &TLSError{"key_file", errors.New("required with cert_file")}
	case t.CertFile == "":
		return nil, &TLSError{"cert_file", errors.New("required with key_file")}
	default:
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, &TLSError{"cert_file", err}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
