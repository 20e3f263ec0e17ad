package redact

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	Add("sk-redact-test-1", "Bearer tok-redact-test-2", "Basic "+base64.StdEncoding.EncodeToString([]byte("bob:pw-redact-test-3")), "abc", `q"uote-redact-4`)
	AddURL("http://alice:pw-redact-test-5@127.0.0.1:8000/")
	for _, tc := range []struct{ in, want string }{
		{"no secret here", "no secret here"},
		{"key sk-redact-test-1 echoed", "key [REDACTED] echoed"},
		{"Authorization: Bearer tok-redact-test-2", "Authorization: [REDACTED]"},
		{"token tok-redact-test-2 alone", "token [REDACTED] alone"},      // the credential without its scheme
		{"decoded bob:pw-redact-test-3", "decoded [REDACTED]"},           // what Basic carries
		{"password pw-redact-test-3 alone", "password [REDACTED] alone"}, // its password
		{"abc is too short to search", "abc is too short to search"},     // under MinLen
		{`{"h":"q\"uote-redact-4"}`, `{"h":"[REDACTED]"}`},               // JSON-escaped
		{"GET http://alice:pw-redact-test-5@127.0.0.1:8000/v1", "GET http://[REDACTED]@127.0.0.1:8000/v1"},
		{"basic " + base64.StdEncoding.EncodeToString([]byte("alice:pw-redact-test-5")), "basic [REDACTED]"},
		{"unknown https://u:p@example.com/x", "unknown https://[REDACTED]@example.com/x"}, // any URL's userinfo
		{"mail me@example.com", "mail me@example.com"},                                    // not a URL
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestWriterRedactsLogLines(t *testing.T) {
	Add("sk-writer-test-secret")
	var b bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(Writer(&b), nil), slog.NewJSONHandler(Writer(&b), nil)} {
		log := slog.New(h).With("bound", "Bearer sk-writer-test-secret")
		log.Info("server said sk-writer-test-secret", "body", `{"auth":"sk-writer-test-secret"}`, "url", "http://u:sk-other@h/")
	}
	out := b.String()
	if strings.Contains(out, "sk-writer-test-secret") || strings.Contains(out, "sk-other") {
		t.Errorf("log lines hold a secret:\n%s", out)
	}
	if n := strings.Count(out, Mark); n < 8 {
		t.Errorf("%d marks in the log lines; want 8:\n%s", n, out)
	}
}

func TestHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "proxy-authorization": true, "X-API-Key": true, "api-key": true, "Cookie": true,
		"X-Auth-Token": true, "Ocp-Apim-Subscription-Key": true, "X-Goog-Api-Key": true,
		"X-Team": false, "Content-Type": false, "X-Max-Tokens": false, "Accept": false,
	} {
		if got := Header(name); got != want {
			t.Errorf("Header(%q) = %v; want %v", name, got, want)
		}
	}
}
