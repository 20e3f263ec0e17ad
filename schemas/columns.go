package schemas

import (
	"fmt"
	"reflect"
	"strings"
)

// Column documents one leaf column of a kind.
type Column struct {
	Name     string // dotted path for nested groups, e.g. ttft_ns.p99
	Type     string // Parquet physical/logical type as seen by users
	Optional bool
	Unit     string
	Doc      string
}

// Columns lists a kind's leaf columns in file order with their type, unit and meaning.
func (k Kind) Columns() []Column {
	return columns(k.Row, "", "")
}

func columns(t reflect.Type, prefix, parentUnit string) []Column {
	var out []Column
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("parquet")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		full := prefix + name
		ft := f.Type
		optional := strings.Contains(opts, "optional")
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		unit := unitOf(name)
		if unit == "" {
			unit = parentUnit
		}
		if ft.Kind() == reflect.Struct {
			for _, c := range columns(ft, full+".", unit) {
				if c.Doc != "" && f.Tag.Get("doc") != "" {
					c.Doc = f.Tag.Get("doc") + ": " + c.Doc
				}
				out = append(out, c)
			}
			continue
		}
		out = append(out, Column{Name: full, Type: typeName(ft, opts), Optional: optional, Unit: unit, Doc: f.Tag.Get("doc")})
	}
	return out
}

// unitOf derives the unit from the column-name suffix, the project's naming rule.
func unitOf(name string) string {
	switch {
	case strings.HasSuffix(name, "_ns"):
		return "ns"
	case strings.HasSuffix(name, "_tokens"):
		return "tokens"
	case strings.HasSuffix(name, "_bytes"):
		return "bytes"
	case strings.HasSuffix(name, "_rate"), strings.HasSuffix(name, "_tps"):
		return "1/s"
	case strings.HasSuffix(name, "_share"), strings.HasSuffix(name, "_fidelity"), strings.Contains(name, "rho"):
		return "ratio"
	}
	return ""
}

func typeName(t reflect.Type, opts string) string {
	switch t.Kind() {
	case reflect.Bool:
		return "BOOLEAN"
	case reflect.Int32:
		return "INT32"
	case reflect.Int64:
		return "INT64"
	case reflect.Float64:
		return "DOUBLE"
	case reflect.String:
		if strings.Contains(opts, "dict") {
			return "STRING (dictionary)"
		}
		return "STRING"
	}
	return fmt.Sprint(t)
}
