package schemas

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"strconv"
	"strings"
)

// MaxImageSide bounds a synthetic image's side (pixels): the largest input size vision models
// take is well below it.
const MaxImageSide = 8192

// Synthetic images are part of the prompts file's contract: Prompt.ImagesJSON may hold a
// reference synthetic:FORMAT:WxH:SEED instead of an image, and the bytes it stands for are a
// function of the reference alone (seeded noise pixels), so replay stores a few bytes and
// capture renders the same image on every host.

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
	if !found || e1 != nil || e2 != nil || e3 != nil || (ref.Format != "png" && ref.Format != "jpeg") ||
		ref.Width <= 0 || ref.Height <= 0 || ref.Width > MaxImageSide || ref.Height > MaxImageSide {
		return ImageRef{}, true, bad
	}
	return ref, true, nil
}

// Render encodes the image: seeded noise pixels, the same bytes for the same reference.
func (r ImageRef) Render() ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, r.Width, r.Height))
	rng := rand.New(rand.NewPCG(uint64(r.Seed), 0x706978))
	for i := 0; i < len(img.Pix); i += 4 {
		v := rng.Uint32()
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = byte(v), byte(v>>8), byte(v>>16), 0xff
	}
	var b bytes.Buffer
	var err error
	if r.Format == "jpeg" {
		err = jpeg.Encode(&b, img, &jpeg.Options{Quality: 90})
	} else {
		// Every alpha is 0xff, so img.Opaque() holds and the encoder writes RGB.
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, img)
	}
	return b.Bytes(), err
}

// ResolveImage returns the URL to send for an images_json entry: a synthetic reference rendered
// as a data: URL, anything else as it is.
func ResolveImage(s string) (string, error) {
	ref, ok, err := ParseImageRef(s)
	if !ok || err != nil {
		return s, err
	}
	b, err := ref.Render()
	if err != nil {
		return "", fmt.Errorf("render %s: %w", s, err)
	}
	return "data:image/" + ref.Format + ";base64," + base64.StdEncoding.EncodeToString(b), nil
}
