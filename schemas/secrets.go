package schemas

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/wirebench/wirebench/internal/redact"
)

// The target's secrets: the API key (named by api_key_env), the values of credential headers
// (redact.Header) and the userinfo of url and metrics_url. The manifest keeps the config
// without them (Target.Redacted); capture takes them from its environment (api_key_env and
// ${VAR} in a header value, see internal/secret) or, under `wirebench run`, from the config it
// has in memory.

// refsOnly matches a header value that holds no secret of its own: ${VAR} references, after an
// optional authentication scheme ("Bearer ${TOKEN}").
var refsOnly = regexp.MustCompile(`^(?:[A-Za-z]+ +)?(?:\$\{[A-Za-z_][A-Za-z0-9_]*\})+$`)

// writtenSecret reports whether a header's value, as the config gives it, is a secret written
// out: a credential header's value that is not only ${VAR} references.
func writtenSecret(name, value string) bool {
	return redact.Header(name) && !refsOnly.MatchString(value)
}

// SecretFields returns the fields of t that hold a secret written out: url or metrics_url with
// a userinfo, a credential header whose value is not only ${VAR} references.
func (t Target) SecretFields() []string {
	var out []string
	for _, f := range t.URLFields() {
		if redact.URL(f.URL) != f.URL {
			out = append(out, f.Field)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
		if writtenSecret(k, t.Headers[k]) {
			out = append(out, "target.headers."+k)
		}
	}
	return out
}

// ConfigURL is a URL of the target with the config field that holds it.
type ConfigURL struct{ Field, URL string }

// URLFields returns t's URLs with their config fields: url, metrics_url, urls[i].url.
func (t Target) URLFields() []ConfigURL {
	out := []ConfigURL{{"target.url", t.URL}, {"target.metrics_url", t.MetricsURL}}
	for i, e := range t.URLs {
		out = append(out, ConfigURL{fmt.Sprintf("target.urls[%d].url", i), e.URL})
	}
	return out
}

// Redacted returns t as the manifest keeps it: each field of SecretFields with its secret
// replaced by redact.Mark (a URL keeps its scheme and host).
func (t Target) Redacted() Target {
	t.URL, t.MetricsURL = redact.URL(t.URL), redact.URL(t.MetricsURL)
	if t.URLs != nil {
		eps := slices.Clone(t.URLs)
		for i := range eps {
			eps[i].URL = redact.URL(eps[i].URL)
		}
		t.URLs = eps
	}
	if t.Headers != nil {
		h := make(map[string]string, len(t.Headers))
		for k, v := range t.Headers {
			if writtenSecret(k, v) {
				v = redact.Mark
			}
			h[k] = v
		}
		t.Headers = h
	}
	return t
}
