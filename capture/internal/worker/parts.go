package worker

import (
	"path/filepath"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// FileDone reports one finished part file.
type FileDone struct {
	Path string `json:"path"` // relative to the run directory
	Kind string `json:"kind"`
	Rows int64  `json:"rows"`
	Part int32  `json:"part"`
}

// partWriter writes one worker's requests and chunks in parts: requests-wNN-PPPP.parquet and
// chunks-wNN-PPPP.parquet share the part number PPPP and roll together after maxRows chunk rows
// or every interval. A part's files are created on its first row and closed atomically, so a
// crash loses at most the open part. It is used by a single goroutine.
type partWriter struct {
	run      string
	worker   int
	producer schemas.Producer
	maxRows  int64
	interval time.Duration
	onFile   func(FileDone)

	part    int32
	opened  time.Time
	reqs    *schemas.Writer[schemas.RawRequest]
	chunks  *schemas.Writer[schemas.RawChunk]
	reqBuf  []schemas.RawRequest
	chunkBf []schemas.RawChunk
}

const flushRows = 4096

func newPartWriter(run string, worker int, p schemas.Producer, maxRows int, interval time.Duration, onFile func(FileDone)) *partWriter {
	return &partWriter{
		run: run, worker: worker, producer: p,
		maxRows: int64(maxRows), interval: interval, onFile: onFile,
		reqBuf: make([]schemas.RawRequest, 0, flushRows), chunkBf: make([]schemas.RawChunk, 0, flushRows),
	}
}

func (w *partWriter) name(k schemas.Kind) string {
	return filepath.Join(w.run, filepath.FromSlash(k.PartPath(w.worker, int(w.part))))
}

// add buffers one request and its chunks; rows are copied, so the caller may reuse them.
func (w *partWriter) add(r *schemas.RawRequest, chunks []schemas.RawChunk) error {
	if w.reqs == nil {
		var err error
		if w.reqs, err = schemas.Create[schemas.RawRequest](w.name(schemas.KindOf[schemas.RawRequest]()), w.producer); err != nil {
			return err
		}
		if w.chunks, err = schemas.Create[schemas.RawChunk](w.name(schemas.KindOf[schemas.RawChunk]()), w.producer); err != nil {
			w.reqs.Abort()
			w.reqs = nil
			return err
		}
		w.opened = time.Now()
	}
	w.reqBuf = append(w.reqBuf, *r)
	if len(chunks) >= flushRows {
		// A long response goes to the writer as it is: copied into the buffer, it would leave
		// the buffer as large as the longest response for the rest of the run.
		if err := w.flush(); err != nil {
			return err
		}
		if err := w.chunks.Write(chunks); err != nil {
			return err
		}
	} else {
		w.chunkBf = append(w.chunkBf, chunks...)
	}
	if len(w.reqBuf) >= flushRows || len(w.chunkBf) >= flushRows {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if w.chunks.Rows()+int64(len(w.chunkBf)) >= w.maxRows {
		return w.roll()
	}
	return nil
}

func (w *partWriter) flush() error {
	if w.reqs == nil {
		return nil
	}
	if len(w.reqBuf) > 0 {
		if err := w.reqs.Write(w.reqBuf); err != nil {
			return err
		}
		clear(w.reqBuf) // drop text references
		w.reqBuf = w.reqBuf[:0]
	}
	if len(w.chunkBf) > 0 {
		if err := w.chunks.Write(w.chunkBf); err != nil {
			return err
		}
		w.chunkBf = w.chunkBf[:0]
	}
	return nil
}

// tick rolls the part when it has been open for the interval.
func (w *partWriter) tick(now time.Time) error {
	if w.reqs != nil && now.Sub(w.opened) >= w.interval {
		return w.roll()
	}
	return nil
}

// roll closes the open part (if any) and reports its files; the next row opens a new part.
func (w *partWriter) roll() error {
	if w.reqs == nil {
		return nil
	}
	err := w.flush()
	reqs, chunks := w.reqs, w.chunks
	w.reqs, w.chunks = nil, nil
	if err != nil {
		reqs.Abort()
		chunks.Abort()
		return err
	}
	if err := reqs.Close(); err != nil {
		chunks.Abort()
		return err
	}
	w.report(reqs.Path(), schemas.KindOf[schemas.RawRequest]().Name, reqs.Rows())
	if err := chunks.Close(); err != nil {
		return err
	}
	w.report(chunks.Path(), schemas.KindOf[schemas.RawChunk]().Name, chunks.Rows())
	w.part++
	return nil
}

func (w *partWriter) report(path, kind string, rows int64) {
	rel, err := filepath.Rel(w.run, path)
	if err != nil {
		rel = path
	}
	if w.onFile != nil {
		w.onFile(FileDone{Path: filepath.ToSlash(rel), Kind: kind, Rows: rows, Part: w.part})
	}
}

// close finishes the open part.
func (w *partWriter) close() error { return w.roll() }
