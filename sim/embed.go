package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	gojson "github.com/goccy/go-json"
)

// Embeddings (POST /v1/embeddings, OpenAI's format, never streamed). A request is one engine
// sequence whose prompt is all of its inputs (each input its own prefix-cache chain) and whose
// only output is the response: in engine mode it is done at the end of the step that admits
// it, after its prefill (PrefillBase + uncached tokens × PrefillPerToken; the step has no
// decode time unless other sequences decode in it); in fixed mode TTFT after its admission.
// Input i's vector is a deterministic function of its tokens: dims fixed-point numbers in
// [-1, 1] with 6 decimals.

// embedJob is the shape of an embeddings response.
type embedJob struct {
	seeds  []uint64 // one per input: the input's hash, which seeds its vector
	ends   []int    // one per input: the prompt tokens up to its end
	dims   int
	base64 bool // encoding_format base64: little-endian float32s in base64
}

// maxEmbedDims bounds a request's dimensions.
const maxEmbedDims = 1 << 16

// embedInputs counts and hashes the inputs of an embeddings request (a string, a list of
// strings, a list of token ids or a list of such lists) and reads the vectors' shape.
func (s *Server) embedInputs(req *request, j *job) error {
	raw := bytes.TrimSpace(req.Input)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return errors.New("input: required")
	}
	bh := &j.bh
	end := func() error {
		i := len(j.embed.seeds)
		before := 0
		if i > 0 {
			before = j.embed.ends[i-1]
		}
		n := bh.tokens - before
		switch {
		case n == 0:
			return fmt.Errorf("input[%d]: empty", i)
		case n > s.cfg.MaxModelLen:
			return fmt.Errorf("This model's maximum context length is %d tokens. However, you requested %d tokens in the input for embedding generation. Please reduce the length of the input.", s.cfg.MaxModelLen, n)
		}
		j.embed.seeds = append(j.embed.seeds, bh.endChain())
		j.embed.ends = append(j.embed.ends, bh.tokens)
		return nil
	}
	var str string
	var strs []string
	var ids []int64
	var lists [][]int64
	switch {
	case raw[0] == '"' && gojson.Unmarshal(raw, &str) == nil:
		bh.text(str)
		if err := end(); err != nil {
			return err
		}
	case gojson.Unmarshal(raw, &strs) == nil && len(strs) > 0:
		for _, t := range strs {
			bh.text(t)
			if err := end(); err != nil {
				return err
			}
		}
	case gojson.Unmarshal(raw, &ids) == nil && len(ids) > 0:
		for _, id := range ids {
			bh.id(id)
		}
		if err := end(); err != nil {
			return err
		}
	case gojson.Unmarshal(raw, &lists) == nil && len(lists) > 0:
		for _, l := range lists {
			for _, id := range l {
				bh.id(id)
			}
			if err := end(); err != nil {
				return err
			}
		}
	default:
		return errors.New("input: want a string, a list of strings, a list of token ids or a list of lists of token ids, not empty")
	}
	j.embed.dims = s.cfg.EmbeddingDim
	if d := req.Dimensions; d != nil {
		if *d < 1 || *d > maxEmbedDims {
			return fmt.Errorf("dimensions: %d is not in [1, %d]", *d, maxEmbedDims)
		}
		j.embed.dims = *d
	}
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		j.embed.base64 = true
	default:
		return fmt.Errorf("encoding_format: %q is not float or base64", req.EncodingFormat)
	}
	return nil
}

// component returns component d of the vector seeded by h, in millionths: [-1e6, 1e6].
func component(h uint64, d int) int64 {
	x := h + uint64(d+1)*0x9e3779b97f4a7c15 // splitmix64
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return int64(x%2000001) - 1000000
}

// appendMillionths appends v/1e6 with six decimals.
func appendMillionths(b []byte, v int64) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	b = append(b, byte('0'+v/1000000), '.')
	frac := v % 1000000
	for div := int64(100000); div > 0; div /= 10 {
		b = append(b, byte('0'+frac/div%10))
	}
	return b
}

// appendEmbeddings appends the embeddings response body.
func (s *Server) appendEmbeddings(b []byte, j *job) []byte {
	e := &j.embed
	b = append(b, `{"object":"list","data":[`...)
	var raw []byte
	for i, h := range e.seeds {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = appendInt(b, i)
		b = append(b, `,"embedding":`...)
		if e.base64 {
			raw = raw[:0]
			for d := range e.dims {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(float32(component(h, d))/1e6))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for d := range e.dims {
				if d > 0 {
					b = append(b, ',')
				}
				b = appendMillionths(b, component(h, d))
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = append(b, j.model...)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = appendInt(b, j.bh.tokens)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, j.bh.tokens)
	return append(b, "}}\n"...)
}
