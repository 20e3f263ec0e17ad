// Package secret resolves the target's secrets where a request is about to be sent: Resolve
// builds the headers a target's requests carry from target.headers and api_key_env, reading
// the environment (${VAR} in a header value) and registering every secret it meets with
// internal/redact. EnvVars lists the variables a config reads, CheckHeaderTemplate checks a
// header as the config writes it. The config types and which fields hold a secret
// (schemas.Target.Redacted, SecretFields) are schemas'; replay and capture use this package.
package secret

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/wirebench/wirebench/internal/redact"
	"github.com/wirebench/wirebench/schemas"
)

// envRef is a reference to an environment variable in a header value: ${NAME}.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// EnvVar is an environment variable a target reads, with the config field that names it.
type EnvVar struct{ Field, Name string }

// EnvVars returns the environment variables t reads: api_key_env and each ${VAR} of its headers.
func EnvVars(t schemas.Target) []EnvVar {
	var out []EnvVar
	if t.APIKeyEnv != "" {
		out = append(out, EnvVar{"target.api_key_env", t.APIKeyEnv})
	}
	for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
		for _, m := range envRef.FindAllStringSubmatch(t.Headers[k], -1) {
			out = append(out, EnvVar{"target.headers." + k, m[1]})
		}
	}
	return out
}

// ValidHeaderName reports whether name is an HTTP token, as a header name must be.
func ValidHeaderName(name string) bool { return httpguts.ValidHeaderFieldName(name) }

// CheckHeader returns why name and value cannot be sent as a request header: the name must be
// an HTTP token, the value one line without control characters (CR, LF, NUL; a tab is allowed),
// or a line break would end the header and start another. The error never holds the value.
func CheckHeader(name, value string) error {
	if !ValidHeaderName(name) {
		return fmt.Errorf("%q is not a header name (letters, digits and !#$%%&'*+-.^_`|~ only)", name)
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < ' ' && c != '\t' || c == 0x7f {
			what := map[byte]string{'\r': "a CR", '\n': "an LF", 0: "a NUL"}[c]
			if what == "" {
				what = fmt.Sprintf("control character 0x%02x", c)
			}
			return fmt.Errorf("the value holds %s at byte %d: a header value is one line without control characters", what, i)
		}
	}
	return nil
}

// CheckHeaderTemplate is CheckHeader for a header as the config writes it, where ${NAME} names
// an environment variable (letters, digits and _).
func CheckHeaderTemplate(name, value string) error {
	if err := CheckHeader(name, value); err != nil {
		return err
	}
	if strings.Contains(envRef.ReplaceAllString(value, ""), "${") {
		return errors.New("a ${ that does not name an environment variable: write ${NAME} (letters, digits and _)")
	}
	return nil
}

// Resolve returns the headers t's requests carry besides wirebench's own: target.headers with
// each ${VAR} replaced by the variable's value, then the API key of api_key_env (Authorization:
// Bearer KEY; x-api-key for the messages API). An unset or empty variable, a secret the run
// directory did not keep (redact.Mark), or a value that cannot be sent as a header is an error
// naming the field, never the value. Every secret it meets (each credential header's value, each
// variable's value, the userinfo of url and metrics_url) is registered with redact.Add, so
// nothing this process writes or logs afterwards holds one.
func Resolve(t schemas.Target) (http.Header, error) {
	key, err := apiKey(t)
	errs := []error{err}
	for _, f := range t.URLFields() {
		redact.AddURL(f.URL)
		if strings.Contains(f.URL, redact.Mark) {
			how := "give the URL with capture --target"
			switch {
			case f.Field == "target.metrics_url":
				how = "write the config's metrics_url without it"
			case strings.HasPrefix(f.Field, "target.urls"):
				how = "write the config's urls without it"
			}
			errs = append(errs, fmt.Errorf("%s: its user:password is not kept in the run directory: %s, or use wirebench run", f.Field, how))
		}
	}
	h := http.Header{}
	for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
		field, v := "target.headers."+k, t.Headers[k]
		if v == redact.Mark {
			errs = append(errs, fmt.Errorf("%s: its value is a secret, which the run directory does not keep: write it as ${VAR} in the config and set VAR where capture runs, or use wirebench run", field))
			continue
		}
		var secrets []string
		v = envRef.ReplaceAllStringFunc(v, func(ref string) string {
			val, err := env(field, ref[2:len(ref)-1])
			errs = append(errs, err)
			secrets = append(secrets, val)
			return val
		})
		if redact.Header(k) {
			secrets = append(secrets, v)
		}
		redact.Add(secrets...)
		if err := CheckHeader(k, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
		h.Set(k, v)
	}
	switch {
	case key == "":
	case t.API == schemas.APIMessages:
		h.Set("x-api-key", key)
	default:
		h.Set("Authorization", "Bearer "+key)
	}
	return h, errors.Join(errs...)
}

// apiKey returns the value of api_key_env ("" when none is named), registered as a secret.
func apiKey(t schemas.Target) (string, error) {
	if t.APIKeyEnv == "" {
		return "", nil
	}
	key, err := env("target.api_key_env", t.APIKeyEnv)
	redact.Add(key)
	if err == nil {
		if err = CheckHeader("Authorization", key); err != nil {
			return "", fmt.Errorf("target.api_key_env: environment variable %s: %w", t.APIKeyEnv, err)
		}
	}
	return key, err
}

// env returns the value of the variable name, which field names; unset or empty is an error.
func env(field, name string) (string, error) {
	if v := os.Getenv(name); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%s: environment variable %s is not set (or empty)", field, name)
}
