package schemas

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/parquet-go/parquet-go"
)

// WriteText writes a kind's schema as a plain table: column, type, unit, meaning.
func (k Kind) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s  (%s): %s\n", k.Name, k.Path, k.Doc)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COLUMN\tTYPE\tUNIT\tMEANING")
	for _, c := range k.Columns() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.typeText(), c.Unit, c.Doc)
	}
	return tw.Flush()
}

// WriteGolden writes what schemas/testdata/NAME.schema holds: the Parquet schema as the writer
// produces it, then the documented columns. A change to a struct shows up in both halves.
func (k Kind) WriteGolden(w io.Writer) error {
	fmt.Fprintf(w, "%s\n\n", parquet.SchemaOf(zeroOf(k)).String())
	return k.WriteText(w)
}

// WriteMarkdown writes a kind's schema as a Markdown section.
func (k Kind) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "## %s\n\n`RUN/%s`: %s.\n\n", k.Name, k.Path, k.Doc)
	fmt.Fprintln(w, "| column | type | unit | meaning |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, c := range k.Columns() {
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", c.Name, c.typeText(), c.Unit, strings.ReplaceAll(c.Doc, "|", `\|`))
	}
	fmt.Fprintln(w)
	return nil
}

func (c Column) typeText() string {
	if c.Optional {
		return c.Type + " null"
	}
	return c.Type
}

// WriteSchemasMarkdown writes the whole of SCHEMAS.md.
func WriteSchemasMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "# wirebench file schemas (version %d)\n\n", SchemaVersion)
	fmt.Fprint(w, markdownIntro)
	for _, k := range Kinds {
		if err := k.WriteMarkdown(w); err != nil {
			return err
		}
	}
	writeErrorKindsMarkdown(w)
	for _, f := range JSONFiles {
		if err := f.WriteMarkdown(w); err != nil {
			return err
		}
	}
	fmt.Fprint(w, markdownOutro)
	return nil
}
