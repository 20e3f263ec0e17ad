package schemas

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
