package replay

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

func validateImages(v *validator, im *schemas.Images, api string) {
	f := "workload.images."
	if !schemas.MessageAPI(api) {
		v.errf(f[:len(f)-1], "needs target.api chat, responses or messages (got %s)", api)
	}
	if im.Count <= 0 || im.Count > MaxPerRequest {
		v.errf(f+"count", "%d: must be in 1..%d", im.Count, MaxPerRequest)
	}
	if im.Width <= 0 || im.Width > schemas.MaxImageSide || im.Height <= 0 || im.Height > schemas.MaxImageSide {
		v.errf(f+"width", "width and height must be in 1..%d", schemas.MaxImageSide)
	}
	switch im.Format {
	case schemas.ImagePNG, schemas.ImageJPEG:
	default:
		v.errf(f+"format", "%q: want png or jpeg", im.Format)
	}
	if im.Distinct < 0 || im.Distinct > MaxPerRequest {
		v.errf(f+"distinct", "%d: must be in 0..%d (0: 16)", im.Distinct, MaxPerRequest)
	}
}

// imagePicker draws the image references of each new prompt.
type imagePicker struct {
	cfg  *schemas.Images
	rng  *rand.Rand
	refs []string
}

func newImagePicker(cfg *schemas.Images, seed int64) *imagePicker {
	n := cfg.Distinct
	if n == 0 {
		n = 16
	}
	p := &imagePicker{cfg: cfg, rng: rand.New(rand.NewPCG(uint64(seed), 0x696d67))}
	for i := range n {
		p.refs = append(p.refs, fmt.Sprintf("synthetic:%s:%dx%d:%d", cfg.Format, cfg.Width, cfg.Height, seed*1000003+int64(i)))
	}
	return p
}

// pick returns the images_json of a new prompt.
func (p *imagePicker) pick() string {
	refs := make([]string, p.cfg.Count)
	for i := range refs {
		refs[i] = p.refs[p.rng.IntN(len(p.refs))]
	}
	b, _ := json.Marshal(refs)
	return string(b)
}

// normalizeImage checks a dataset image: an http(s) URL or a data:image/...;base64, URL is kept,
// bare base64 becomes a data: URL with the media type sniffed from its bytes.
func normalizeImage(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "http://"), strings.HasPrefix(s, "https://"):
		return s, nil
	case strings.HasPrefix(s, "data:"):
		if !strings.HasPrefix(s, "data:image/") || !strings.Contains(s, ";base64,") {
			return "", fmt.Errorf("image %.40q: a data: URL must be data:image/...;base64,...", s)
		}
		return s, nil
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("image %.40q: not an http(s) URL, a data: URL or base64: %v", s, err)
	}
	mt := http.DetectContentType(raw)
	if !strings.HasPrefix(mt, "image/") {
		return "", fmt.Errorf("image %.40q: base64 data is %s, not an image", s, mt)
	}
	return "data:" + mt + ";base64," + s, nil
}

// imagesJSON normalizes dataset images into an images_json value ("" when none).
func imagesJSON(imgs []string) (string, error) {
	if len(imgs) == 0 {
		return "", nil
	}
	out := make([]string, len(imgs))
	for i, s := range imgs {
		var err error
		if out[i], err = normalizeImage(s); err != nil {
			return "", fmt.Errorf("images[%d]: %w", i, err)
		}
	}
	b, _ := json.Marshal(out)
	return string(b), nil
}
