package worker

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"strings"
	"testing"
)

// TestImageRefs: a synthetic reference renders to an image of its format and size, the same
// bytes every time; malformed references are errors; URLs pass unchanged.
func TestImageRefs(t *testing.T) {
	u, err := resolveImage("synthetic:png:3x2:5")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(u, "data:image/png;base64,"))
	if c, err := png.DecodeConfig(bytes.NewReader(raw)); err != nil || c.Width != 3 || c.Height != 2 {
		t.Errorf("synthetic:png:3x2:5 -> %dx%d (%v); want a 3x2 PNG", c.Width, c.Height, err)
	}
	for _, bad := range []string{"synthetic:gif:3x2:5", "synthetic:png:3:5", "synthetic:png:0x2:5", "synthetic:png:3x2:x", "synthetic:png:3x2"} {
		if _, err := resolveImage(bad); err == nil {
			t.Errorf("resolveImage(%q) = nil error; want an error", bad)
		}
	}
	if again, _ := resolveImage("synthetic:png:3x2:5"); again != u {
		t.Error("synthetic:png:3x2:5 renders differently twice; want the same bytes")
	}
	if u, err := resolveImage("https://x/a.png"); err != nil || u != "https://x/a.png" {
		t.Errorf("resolveImage(URL) = %q, %v; want it unchanged", u, err)
	}
}
