package schemas

import (
	"bufio"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Checksums. A Parquet file guards its page data with a CRC-32 (IEEE) per page, which the
// writer (parquet-go) always stores in the page header and its reader checks on every page it
// reads (parquet.ErrCorrupted), so ReadFile and parquet.NewGenericReader verify as they go.
// Arrow's reader (aggregate's raw parts) does not, and nothing in Parquet guards the page
// headers or the footer: a flipped byte there can rename a column, change its type or its
// null count, and the file still reads, with other values. So:
//
//   - every writer stores the CRC-32 of the file's schema, as the footer will describe it, under
//     MetaSchemaCRC, and OpenKind checks it (files without the key, from before it, are not);
//   - VerifyPages checks every page's CRC-32 and what the checksums leave out: that the page
//     headers' counts and encodings agree with the footer (whose schema was checked).
//
// Aggregate calls VerifyPages before it reads a file with Arrow.

// MetaSchemaCRC is the key-value metadata key of the schema checksum: the CRC-32 (IEEE) of the
// schema's text form (parquet.Schema.String), in decimal.
const MetaSchemaCRC = "wirebench.schema_crc32"

// schemaCRC is the checksum stored under MetaSchemaCRC for schema s.
func schemaCRC(s *parquet.Schema) string {
	return strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(s.String()))), 10)
}

// rowSchema is the Parquet schema of row type t.
func rowSchema(t reflect.Type) *parquet.Schema { return parquet.SchemaOf(reflect.New(t).Interface()) }

// checkSchemaCRC checks the footer's schema against the checksum its writer stored.
func checkSchemaCRC(path string, pf *parquet.File) error {
	want, ok := pf.Lookup(MetaSchemaCRC)
	if !ok {
		return nil
	}
	if got := schemaCRC(pf.Schema()); got != want {
		return fmt.Errorf("%s: %w: the footer's schema fails its checksum (crc32 %s, written %s): a damaged footer", path, ErrCorrupt, got, want)
	}
	return nil
}

// VerifyPages walks every page of every column chunk of f, from the offsets its footer gives,
// and checks each page's CRC-32 against the one in its header; it reads the file once without
// decoding or decompressing anything. The checksum does not cover the page headers, so they
// are checked against the footer: the pages fill their column chunk exactly, hold its values
// (and, v2 pages, the row group's rows and the chunk's null count), use the encodings the
// footer lists for it, and a required column's pages hold no nulls. Errors wrap ErrCorrupt and name the file, the column,
// the row group and the page's offset.
func (f *File) VerifyPages() error {
	md := f.Metadata()
	size := f.Size()
	for g, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			cm := &cc.MetaData
			col := strings.Join(cm.PathInSchema, ".")
			leaf, ok := f.Schema().Lookup(cm.PathInSchema...)
			if !ok {
				return fmt.Errorf("%s: %w: row group %d has column %s, which the schema does not", f.Path, ErrCorrupt, g, col)
			}
			start := cm.DataPageOffset
			if cm.DictionaryPageOffset > 0 && cm.DictionaryPageOffset < start {
				start = cm.DictionaryPageOffset
			}
			if start < 4 || cm.TotalCompressedSize < 0 || start+cm.TotalCompressedSize > size {
				return fmt.Errorf("%s: %w: column %s (row group %d) lies at [%d, %d), outside the file's %d bytes",
					f.Path, ErrCorrupt, col, g, start, start+cm.TotalCompressedSize, size)
			}
			c := &chunkCheck{off: start, n: cm.TotalCompressedSize, meta: cm, rows: rg.NumRows,
				required: leaf.MaxDefinitionLevel == 0, flat: leaf.MaxRepetitionLevel == 0}
			if err := c.verify(io.NewSectionReader(f.f, start, cm.TotalCompressedSize)); err != nil {
				return fmt.Errorf("%s: %w: column %s (row group %d): %v", f.Path, ErrCorrupt, col, g, err)
			}
		}
	}
	return nil
}

// chunkCheck checks one column chunk of n bytes at offset off against its footer entry meta.
type chunkCheck struct {
	off, n         int64
	meta           *format.ColumnMetaData
	rows           int64 // the row group's
	required, flat bool  // no nulls; no repetition

	values, rowsSeen int64
	nulls            int64
	dataSeen         bool
	v1               bool // a v1 data page, which does not count rows
	pages            map[[2]int32]int32
}

// verify reads the chunk's pages: each header followed by its compressed_page_size bytes, whose
// CRC-32 must match the header's (a page without one, crc 0, is not checked), the pages ending
// exactly at the chunk's end with the counts and encodings the footer gives.
func (c *chunkCheck) verify(r io.Reader) error {
	br := &countingReader{r: bufio.NewReader(r)}
	var proto thrift.CompactProtocol
	dec := thrift.NewDecoder(proto.NewReader(br))
	c.pages = map[[2]int32]int32{}
	var page []byte
	for br.n < c.n {
		at := c.off + br.n
		var h format.PageHeader
		if err := dec.Decode(&h); err != nil {
			return fmt.Errorf("page header at offset %d: %v", at, err)
		}
		size := int64(h.CompressedPageSize)
		if size < 0 || br.n+size > c.n {
			return fmt.Errorf("page at offset %d declares %d bytes; %d are left in its column chunk", at, size, c.n-br.n)
		}
		if err := c.header(&h, at); err != nil {
			return fmt.Errorf("page at offset %d: %v", at, err)
		}
		if int64(cap(page)) < size {
			page = make([]byte, size)
		}
		page = page[:size]
		if _, err := io.ReadFull(br, page); err != nil {
			return fmt.Errorf("page at offset %d: %v", at, err)
		}
		if h.CRC != 0 {
			if got := crc32.ChecksumIEEE(page); got != uint32(h.CRC) {
				return fmt.Errorf("page at offset %d fails its checksum (crc32 0x%08x, header says 0x%08x)", at, got, uint32(h.CRC))
			}
		}
	}
	return c.totals()
}

// header checks one page header, at offset at, and counts it: the footer's offsets of the
// dictionary page and of the first data page must be where they are.
func (c *chunkCheck) header(h *format.PageHeader, at int64) error {
	if h.UncompressedPageSize < 0 {
		return fmt.Errorf("uncompressed size %d", h.UncompressedPageSize)
	}
	var enc format.Encoding
	first := c.values == 0 && len(c.pages) == 0
	if h.Type == format.DictionaryPage && (!first || c.meta.DictionaryPageOffset != at) {
		return fmt.Errorf("a dictionary page; the footer puts the chunk's dictionary at offset %d", c.meta.DictionaryPageOffset)
	}
	if h.Type != format.DictionaryPage && !c.dataSeen {
		if c.meta.DataPageOffset != at {
			return fmt.Errorf("the first data page; the footer puts it at offset %d", c.meta.DataPageOffset)
		}
		c.dataSeen = true
	}
	switch {
	case h.Type == format.DictionaryPage && h.DictionaryPageHeader.Valid:
		d := &h.DictionaryPageHeader.V
		if d.NumValues < 0 {
			return fmt.Errorf("dictionary of %d values", d.NumValues)
		}
		enc = d.Encoding
	case h.Type == format.DataPage && h.DataPageHeader.Valid:
		d := &h.DataPageHeader.V
		if d.NumValues < 0 {
			return fmt.Errorf("%d values", d.NumValues)
		}
		c.values += int64(d.NumValues)
		c.v1, enc = true, d.Encoding
	case h.Type == format.DataPageV2 && h.DataPageHeaderV2.Valid:
		d := &h.DataPageHeaderV2.V
		if d.NumValues < 0 || d.NumNulls < 0 || d.NumNulls > d.NumValues || d.NumRows < 0 || d.NumRows > d.NumValues ||
			d.DefinitionLevelsByteLength < 0 || d.RepetitionLevelsByteLength < 0 ||
			int64(d.DefinitionLevelsByteLength)+int64(d.RepetitionLevelsByteLength) > int64(h.CompressedPageSize) ||
			(c.required && (d.NumNulls != 0 || d.DefinitionLevelsByteLength != 0)) ||
			(c.flat && (d.NumRows != d.NumValues || d.RepetitionLevelsByteLength != 0)) {
			return fmt.Errorf("counts impossible for its column: %d values, %d nulls, %d rows, levels %d+%d bytes of %d",
				d.NumValues, d.NumNulls, d.NumRows, d.RepetitionLevelsByteLength, d.DefinitionLevelsByteLength, h.CompressedPageSize)
		}
		c.values += int64(d.NumValues)
		c.rowsSeen += int64(d.NumRows)
		c.nulls += int64(d.NumNulls)
		enc = d.Encoding
	default:
		return fmt.Errorf("page type %d without its header", h.Type)
	}
	if !slices.Contains(c.meta.Encoding, enc) {
		return fmt.Errorf("encoding %v, which the footer does not list for the column (%v)", enc, c.meta.Encoding)
	}
	c.pages[[2]int32{int32(h.Type), int32(enc)}]++
	return nil
}

// totals checks the chunk's counts against the footer: its values, its row group's rows and its
// nulls (v2 pages count both; the writer always stores the chunk's null count), and the pages
// of each type and encoding when the footer counts them.
func (c *chunkCheck) totals() error {
	if c.values != c.meta.NumValues || (!c.v1 && (c.rowsSeen != c.rows || c.nulls != c.meta.Statistics.NullCount)) {
		return fmt.Errorf("pages hold %d values, %d of them null, in %d rows; the footer says %d values, %d null, in %d rows",
			c.values, c.nulls, c.rowsSeen, c.meta.NumValues, c.meta.Statistics.NullCount, c.rows)
	}
	if len(c.meta.EncodingStats) == 0 {
		return nil
	}
	want := map[[2]int32]int32{}
	for _, s := range c.meta.EncodingStats {
		want[[2]int32{int32(s.PageType), int32(s.Encoding)}] += s.Count
	}
	if !maps.Equal(want, c.pages) {
		return fmt.Errorf("pages by type and encoding %v; the footer says %v", c.pages, want)
	}
	return nil
}

// countingReader counts the bytes read through it (the thrift decoder reads a byte at a time).
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}
