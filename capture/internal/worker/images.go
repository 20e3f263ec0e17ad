package worker

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand/v2"

	"github.com/wirebench/wirebench/schemas"
)

// renderImage encodes the image a synthetic reference stands for: seeded noise pixels, the same
// bytes for the same reference on every host.
func renderImage(r schemas.ImageRef) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, r.Width, r.Height))
	rng := rand.New(rand.NewPCG(uint64(r.Seed), 0x706978))
	for i := 0; i < len(img.Pix); i += 4 {
		v := rng.Uint32()
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = byte(v), byte(v>>8), byte(v>>16), 0xff
	}
	var b bytes.Buffer
	var err error
	if r.Format == schemas.ImageJPEG {
		err = jpeg.Encode(&b, img, &jpeg.Options{Quality: 90})
	} else {
		// Every alpha is 0xff, so img.Opaque() holds and the encoder writes RGB.
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, img)
	}
	return b.Bytes(), err
}

// resolveImage returns the URL to send for an images_json entry: a synthetic reference rendered
// as a data: URL, anything else as it is.
func resolveImage(s string) (string, error) {
	ref, ok, err := schemas.ParseImageRef(s)
	if !ok || err != nil {
		return s, err
	}
	b, err := renderImage(ref)
	if err != nil {
		return "", fmt.Errorf("render %s: %w", s, err)
	}
	return "data:image/" + ref.Format + ";base64," + base64.StdEncoding.EncodeToString(b), nil
}
