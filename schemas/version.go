package schemas

import "errors"

// SchemaVersion is written into the key-value metadata of every Parquet file and into
// manifest.json. Bump it whenever a column is renamed, removed or changes meaning; readers refuse
// files of another version with ErrVersion.
const SchemaVersion = 10

// Metadata keys written into every Parquet file's footer.
const (
	MetaVersion = "wirebench.schema_version"
	MetaKind    = "wirebench.kind"
	MetaCommand = "wirebench.command"
	MetaArgs    = "wirebench.args"
)

// Sentinel errors. Readers wrap them with the file name, so callers test with errors.Is.
var (
	// ErrVersion: the file was written by another schema version.
	ErrVersion = errors.New("schema version mismatch")
	// ErrKind: the file holds another kind of rows than the one asked for.
	ErrKind = errors.New("wrong file kind")
	// ErrCorrupt: the file is not a complete Parquet file (cut short by a crash, or not
	// Parquet), or it is damaged: a page or the schema fails its checksum (VerifyPages), or a
	// reader found an impossible value in it (aggregate: a time outside the run).
	ErrCorrupt = errors.New("corrupt parquet file")
)
