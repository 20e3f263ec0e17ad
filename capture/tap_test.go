package capture

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/capture/tap"
	"github.com/wirebench/wirebench/schemas"
)

// TestTapFallback: a target the tap cannot follow turns it off with the reason under auto, and
// fails the capture under on; off never opens it.
func TestTapFallback(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name, target, mode string
		wantErr            bool
		wantReason         string
	}{
		{"auto, IPv6", "https://[::1]:8443", TapAuto, false, "resolve"},
		{"on, IPv6", "http://[::1]:8000", TapOn, true, ""},
		{"auto, unresolvable", "http://no-such-host.invalid:80", TapAuto, false, "resolve"},
		{"off", "http://127.0.0.1:8000", TapOff, false, "--tap off"},
		{"a mode that does not exist", "http://127.0.0.1:8000", "yes", true, ""},
	}
	for _, tt := range tests {
		rec, st, err := startTap(Config{Target: tt.target, CoordOptions: CoordOptions{Tap: tt.mode}, Run: t.TempDir()}, false, log)
		if rec != nil {
			t.Errorf("%s: the tap started", tt.name)
			rec.finish(&schemas.Manifest{})
			continue
		}
		if tt.wantErr {
			if err == nil || (tt.mode == TapOn) != errors.Is(err, tap.ErrUnsupported) {
				t.Errorf("%s: err %v; want an error (wrapping tap.ErrUnsupported under on)", tt.name, err)
			}
			continue
		}
		if err != nil || st == nil || st.On || !strings.Contains(st.Reason, tt.wantReason) {
			t.Errorf("%s: status %+v, err %v; want off with a reason mentioning %q", tt.name, st, err, tt.wantReason)
		}
	}
}

// The tap follows https targets too (the join maps TLS records to segments), on port 443 when
// the URL names none.
func TestTapTargetHTTPS(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"https://127.0.0.1", "127.0.0.1:443"},
		{"https://127.0.0.1:8443/v1", "127.0.0.1:8443"},
		{"http://127.0.0.1", "127.0.0.1:80"},
	} {
		if ap, err := tapTarget(tt.url); err != nil || ap.String() != tt.want {
			t.Errorf("tapTarget(%q) = %v, %v; want %s", tt.url, ap, err, tt.want)
		}
	}
}
