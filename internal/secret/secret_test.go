package secret

import (
	"strings"
	"testing"

	"github.com/wirebench/wirebench/internal/redact"
	"github.com/wirebench/wirebench/schemas"
)

func TestResolve(t *testing.T) {
	t.Setenv("WB_RESOLVE_KEY", "sk-resolve-key")
	t.Setenv("WB_RESOLVE_TOK", "tok-resolve")
	t.Setenv("WB_RESOLVE_CRLF", "a\r\nX-Injected: 1")
	t.Setenv("WB_RESOLVE_EMPTY", "")
	for _, tc := range []struct {
		name    string
		tg      schemas.Target
		want    map[string]string // header -> value
		wantErr []string          // substrings of the error
	}{
		{name: "key as bearer, variables filled in",
			tg:   schemas.Target{APIKeyEnv: "WB_RESOLVE_KEY", Headers: map[string]string{"X-Api-Key": "${WB_RESOLVE_TOK}", "Authorization": "overridden"}},
			want: map[string]string{"Authorization": "Bearer sk-resolve-key", "X-Api-Key": "tok-resolve"}},
		{name: "messages: the key as x-api-key",
			tg:   schemas.Target{API: "messages", APIKeyEnv: "WB_RESOLVE_KEY"},
			want: map[string]string{"X-Api-Key": "sk-resolve-key"}},
		{name: "unset and empty variables",
			tg:      schemas.Target{APIKeyEnv: "WB_RESOLVE_NONE", Headers: map[string]string{"X-A": "${WB_RESOLVE_EMPTY}"}},
			wantErr: []string{"target.api_key_env: environment variable WB_RESOLVE_NONE is not set", "target.headers.X-A: environment variable WB_RESOLVE_EMPTY is not set"}},
		{name: "a line break from a variable",
			tg:      schemas.Target{Headers: map[string]string{"X-A": "${WB_RESOLVE_CRLF}"}},
			wantErr: []string{"target.headers.X-A: the value holds a CR at byte 1"}},
		{name: "secrets the manifest did not keep",
			tg:      schemas.Target{URL: "http://[REDACTED]@h:1", Headers: map[string]string{"Authorization": redact.Mark}},
			wantErr: []string{"target.url: its user:password is not kept", "target.headers.Authorization: its value is a secret"}},
	} {
		h, err := Resolve(tc.tg)
		for k, v := range tc.want {
			if got := h.Get(k); got != v {
				t.Errorf("%s: Resolve: %s = %q; want %q", tc.name, k, got, v)
			}
		}
		for _, w := range tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Resolve: error %v; want one saying %q", tc.name, err, w)
			}
		}
		if err != nil && (len(tc.wantErr) == 0 || strings.Contains(err.Error(), "Injected")) {
			t.Errorf("%s: Resolve: error %v", tc.name, err)
		}
	}
	// What Resolve met is a secret from then on.
	if got := redact.String("echo sk-resolve-key tok-resolve"); got != "echo [REDACTED] [REDACTED]" {
		t.Errorf("after Resolve, String(...) = %q", got)
	}
}

func TestCheckHeaderTemplate(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"X-Ok", "Bearer ${T}\tand more", ""},
		{"X-Evil", "a\r\nX-Injected: 1", "holds a CR at byte 1"},
		{"X-Evil", "a\nb", "holds an LF at byte 1"},
		{"X-Evil", "a\x00b", "holds a NUL at byte 1"},
		{"X-Evil", "a\x1bb", "control character 0x1b"},
		{"X Bad", "v", `"X Bad" is not a header name`},
		{"X-Evil\r\nX-Injected", "v", "is not a header name"},
		{"X-Ref", "${1BAD}", "does not name an environment variable"},
		{"X-Ref", "${OPEN", "does not name an environment variable"},
	} {
		err := CheckHeaderTemplate(tc.name, tc.value)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckHeaderTemplate(%q, %q) = %v; want %q", tc.name, tc.value, err, tc.want)
		}
	}
}
