package schemas

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxImageSide bounds a synthetic image's side (pixels): the largest input size vision models
// take is well below it.
const MaxImageSide = 8192

// Synthetic images are part of the prompts file's contract: Prompt.ImagesJSON may hold a
// reference synthetic:FORMAT:WxH:SEED instead of an image, and the bytes it stands for are a
// function of the reference alone (seeded noise pixels), so replay stores a few bytes and
// capture renders the same image on every host (capture/internal/worker's resolveImage).

// Image formats of a synthetic reference (ImageRef.Format, Images.Format).
const (
	ImagePNG  = "png"
	ImageJPEG = "jpeg"
)

// ImageRef is a parsed synthetic image reference.
type ImageRef struct {
	Format        string // png or jpeg
	Width, Height int
	Seed          int64
}

// ParseImageRef parses "synthetic:FORMAT:WxH:SEED"; ok is false for anything else (a URL).
func ParseImageRef(s string) (ref ImageRef, ok bool, err error) {
	rest, found := strings.CutPrefix(s, "synthetic:")
	if !found {
		return ImageRef{}, false, nil
	}
	parts := strings.Split(rest, ":")
	bad := fmt.Errorf("image %q: want synthetic:FORMAT:WxH:SEED", s)
	if len(parts) != 3 {
		return ImageRef{}, true, bad
	}
	ref.Format = parts[0]
	w, h, found := strings.Cut(parts[1], "x")
	var e1, e2, e3 error
	ref.Width, e1 = strconv.Atoi(w)
	ref.Height, e2 = strconv.Atoi(h)
	ref.Seed, e3 = strconv.ParseInt(parts[2], 10, 64)
	if !found || e1 != nil || e2 != nil || e3 != nil || (ref.Format != ImagePNG && ref.Format != ImageJPEG) ||
		ref.Width <= 0 || ref.Height <= 0 || ref.Width > MaxImageSide || ref.Height > MaxImageSide {
		return ImageRef{}, true, bad
	}
	return ref, true, nil
}
