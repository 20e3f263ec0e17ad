package schemas

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go/format"
)

func TestSealThenClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schedule", "prompts.parquet")
	w, err := Create[Prompt](path, Producer{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]Prompt{{PromptID: 1, Text: "hello"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Seal, stat %s = %v; want no file under the final name yet", path, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadFile[Prompt](path)
	if err != nil || len(rows) != 1 || rows[0].Text != "hello" {
		t.Errorf("after Seal and Close: %v, %v; want the one row", rows, err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp-*")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

// TestRawChunkZeroIsNull: a raw-chunks row's optional times and offsets are written as null
// when 0 and as values otherwise, delta-encoded, and read back as 0 and the values.
func TestRawChunkZeroIsNull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw", "chunks-w00-0000.parquet")
	full := RawChunk{Seq: 1, RxKernelNs: 10, RxUserNs: 11, RxStreamEnd: 12, RxAfterNs: 9, ServerSentNs: 7, ServerSentEndNs: 8}
	empty := RawChunk{Seq: 2, RxUserNs: 21}
	if err := WriteFile(path, []RawChunk{full, empty}, Producer{Command: "test"}); err != nil {
		t.Fatal(err)
	}
	f, err := Open[RawChunk](path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, cc := range f.Metadata().RowGroups[0].Columns {
		name, md := cc.MetaData.PathInSchema[0], cc.MetaData
		switch name {
		case "rx_kernel_ns", "rx_stream_end", "rx_after_ns", "server_sent_ns", "server_sent_end_ns":
			if md.Statistics.NullCount != 1 {
				t.Errorf("%s: %d nulls; want 1 (the row with 0)", name, md.Statistics.NullCount)
			}
		case "rx_user_ns":
		default:
			continue
		}
		if !slices.Contains(md.Encoding, format.DeltaBinaryPacked) {
			t.Errorf("%s: encodings %v; want DELTA_BINARY_PACKED", name, md.Encoding)
		}
	}
	rows, err := ReadFile[RawChunk](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0] != full || rows[1] != empty {
		t.Errorf("read back %+v; want %+v and %+v", rows, full, empty)
	}
}
