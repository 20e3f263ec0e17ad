// Package redact keeps secrets out of everything wirebench writes and logs: the API key, the
// values of credential headers and the user:password of URLs. A process registers the secret
// values it holds (Add) once it knows them; String then replaces each with Mark in any text, and
// Writer does it for every line a log handler writes. URL userinfo is replaced wherever it
// appears in a text, registered or not.
//
// It is not on the hot path: a worker redacts a request's error message (and, with --keep-text,
// its text) once, when it writes the request's row, never per event.
package redact

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Mark replaces a secret.
const Mark = "[REDACTED]"

// MinLen is the shortest secret searched for in free text: a shorter one would turn common
// letters of every message into Mark. Where wirebench knows the field (a credential header in
// the manifest, a URL's userinfo) it is replaced whatever its length.
const MinLen = 4

// registry holds the registered secrets, longest first, so a value is replaced before a part of
// it; reads are lock-free.
var registry struct {
	mu   sync.Mutex
	vals atomic.Pointer[[]string]
}

// Add registers secret values: each of at least MinLen bytes, with its forms as JSON and Go
// quoting escape it (a log line quotes its values), and with the credential after an
// authentication scheme ("Bearer KEY": KEY; "Basic B64": B64, the user:password it decodes to
// and the password).
func Add(secrets ...string) {
	var add []string
	for _, s := range secrets {
		add = append(add, forms(s)...)
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	var vals []string
	if p := registry.vals.Load(); p != nil {
		vals = slices.Clone(*p)
	}
	for _, s := range add {
		if len(s) >= MinLen && !slices.Contains(vals, s) {
			vals = append(vals, s)
		}
	}
	slices.SortFunc(vals, func(a, b string) int { return len(b) - len(a) })
	registry.vals.Store(&vals)
}

// forms returns s and what a server or a log line may show of it.
func forms(s string) []string {
	out := []string{s}
	if scheme, cred, ok := strings.Cut(s, " "); ok && isWord(scheme) {
		out = append(out, cred)
		if strings.EqualFold(scheme, "basic") {
			if b, err := base64.StdEncoding.DecodeString(cred); err == nil {
				_, pass, _ := strings.Cut(string(b), ":")
				out = append(out, string(b), pass)
			}
		}
	}
	for _, v := range slices.Clone(out) {
		if q := strconv.Quote(v); q[1:len(q)-1] != v {
			out = append(out, q[1:len(q)-1])
		}
		if j, err := json.Marshal(v); err == nil && string(j[1:len(j)-1]) != v {
			out = append(out, string(j[1:len(j)-1]))
		}
	}
	return out
}

func isWord(s string) bool {
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return s != ""
}

// AddURL registers the userinfo of a URL: user:password escaped and decoded, the password, and
// user:password in base64 (an HTTP client sends it as Basic authorization); a user without a
// password is taken for a token and registered itself.
func AddURL(raw string) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return
	}
	pass, ok := u.User.Password()
	if !ok { // a user alone is a token (https://TOKEN@host)
		Add(u.User.String(), u.User.Username())
		return
	}
	plain := u.User.Username() + ":" + pass
	Add(u.User.String(), plain, pass, base64.StdEncoding.EncodeToString([]byte(plain)))
}

// userinfo matches the userinfo of a URL in a text.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@"'<>]+@`)

// String returns s with every registered secret and every URL's userinfo replaced by Mark.
func String(s string) string {
	if p := registry.vals.Load(); p != nil {
		for _, v := range *p {
			if strings.Contains(s, v) {
				s = strings.ReplaceAll(s, v, Mark)
			}
		}
	}
	return URL(s)
}

// URL returns s with the userinfo of every URL in it replaced by Mark
// (http://[REDACTED]@host:port/), whatever its length.
func URL(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return userinfo.ReplaceAllString(s, "${1}"+Mark+"@")
}

// Strings returns ss with String applied to each; ss is not changed.
func Strings(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = String(s)
	}
	return out
}

// Writer returns a writer that passes each write to w with String applied. Log handlers write
// one record per write, so no secret is split between two writes.
func Writer(w io.Writer) io.Writer { return writer{w} }

type writer struct{ w io.Writer }

func (x writer) Write(p []byte) (int, error) {
	s := String(string(p))
	if s == string(p) {
		return x.w.Write(p)
	}
	if _, err := io.WriteString(x.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Header reports whether a request header carries credentials: Authorization,
// Proxy-Authorization, x-api-key, api-key, Cookie, or any name (case-insensitive) holding
// "auth", "apikey", "api-key", "api_key", "secret", "password", "passwd", "credential",
// "access-token" or "subscription-key". A name that merely holds "token" is not one (an LLM
// server's X-Max-Tokens is no secret).
func Header(name string) bool {
	n := strings.ToLower(name)
	if n == "cookie" {
		return true
	}
	for _, w := range []string{"auth", "apikey", "api-key", "api_key", "secret", "password", "passwd", "credential", "access-token", "subscription-key"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
