package schemas

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// checksumRows are rows of every column shape the writer makes: required and optional,
// delta-encoded, dictionary strings, nulls in runs and alone, over two row groups' worth of pages.
func checksumRows(n int) []RawChunk {
	rows := make([]RawChunk, n)
	for i := range rows {
		t := int64(1.7e18) + int64(i)*1e6
		rows[i] = RawChunk{Seq: int64(i / 4), Index: int32(i % 4), RxUserNs: t + 30_000, Quality: []string{"exact", "user"}[i%2],
			Kind: []string{"content", "done"}[i%4/3], Bytes: int32(100 + i%7), ContentBytes: int32(i % 5)}
		if i%3 != 0 {
			rows[i].RxKernelNs = t
		}
		if i%5 == 0 {
			v := int32(i % 9)
			rows[i].Tokens = &v
		}
	}
	return rows
}

// TestFlippedByteNeverReadsAsOtherValues flips each byte of a file in turn: every flip is either
// an error wrapping ErrCorrupt (or another sentinel) naming the file, or reads the same rows (a
// byte that only statistics or the producer's arguments hold). No flip reads as other values.
func TestFlippedByteNeverReadsAsOtherValues(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chunks.parquet")
	rows := checksumRows(24)
	if err := WriteFile(path, rows, Producer{Command: "test"}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(dir, "damaged.parquet")
	var detected, same int
	for off := range good {
		b := append([]byte(nil), good...)
		b[off] ^= 0x5a
		if err := os.WriteFile(damaged, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile[RawChunk](damaged)
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), damaged) || !(errors.Is(err, ErrCorrupt) || errors.Is(err, ErrVersion) || errors.Is(err, ErrKind)) {
				t.Errorf("byte %d flipped: error %q; want ErrCorrupt, ErrVersion or ErrKind naming the file", off, err)
			}
			detected++
		case reflect.DeepEqual(got, rows):
			same++
		default:
			t.Errorf("byte %d of %d flipped: read %d rows that differ from those written, without an error", off, len(good), len(got))
		}
	}
	if detected < len(good)/2 {
		t.Errorf("%d of %d flipped bytes detected; want most (every page byte fails its checksum)", detected, len(good))
	}
	t.Logf("%d bytes: %d flips detected, %d harmless", len(good), detected, same)
}

// TestVerifyPagesFindsTheDamage: a clean file verifies; a flipped byte in a page's data fails
// its checksum, named with the column and the offset.
func TestVerifyPagesFindsTheDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chunks.parquet")
	if err := WriteFile(path, checksumRows(1000), Producer{}); err != nil {
		t.Fatal(err)
	}
	verify := func() error {
		f, err := Open[RawChunk](path)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.VerifyPages()
	}
	if err := verify(); err != nil {
		t.Fatalf("VerifyPages of a clean file: %v", err)
	}
	b, _ := os.ReadFile(path)
	f, err := Open[RawChunk](path)
	if err != nil {
		t.Fatal(err)
	}
	cm := f.Metadata().RowGroups[0].Columns[0].MetaData // seq: no dictionary
	f.Close()
	b[cm.DataPageOffset+cm.TotalCompressedSize-1] ^= 1 // the last byte of its last page
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	err = verify()
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "column seq") || !strings.Contains(err.Error(), "fails its checksum") {
		t.Errorf("VerifyPages after a flip in column seq's data: %v; want ErrCorrupt naming the file, the column and the checksum", err)
	}
}
