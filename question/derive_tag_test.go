package question

import (
	"reflect"
	"strings"
	"testing"
)

// Struct tags that are not Go tag syntax, which reflect.StructTag.Get
// reads as no tag at all. go vet refuses such a tag in a source file, so
// these types are built at run time; schemaOf is what SchemaFor runs on
// its type parameter.
//
// The first is the tag the documentation once showed: a single backslash
// before a comma is no Go escape, so the whole tag (json name and
// minimum=100 with it) would vanish without a word.
func TestSchemaForRefusesATagReflectWouldDrop(t *testing.T) {
	for tag, want := range map[string]string{
		`json:"eur" jsonschema:"minimum=100,description=Price\, in EUR"`: `a comma inside a value is written \\, in the tag`,
		`json:"s" jsonschema:"pattern=^\d+$"`:                            `a backslash in the tag is written \\`,
		`json:"n",jsonschema:"minimum=1"`:                                "not separated by spaces",
		`json:"n" jsonschema:"minimum=1`:                                 "unterminated value",
		`json:"n" jsonschema:minimum=1`:                                  "not key:\"value\" syntax",
	} {
		typ := reflect.StructOf([]reflect.StructField{{Name: "EUR", Type: reflect.TypeFor[int](), Tag: reflect.StructTag(tag)}})
		if _, ok := typ.Field(0).Tag.Lookup("jsonschema"); ok {
			t.Fatalf("reflect reads the tag %s; the test needs one it drops", tag)
		}
		raw, err := schemaOf(typ)
		if err == nil {
			t.Errorf("SchemaFor took the tag %s, which reflect drops, and gave %s", tag, raw)
			continue
		}
		for _, w := range []string{"question: SchemaFor[struct {", "field struct {", ".EUR", "struct tag", want} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("tag %s: the error %q does not say %q", tag, err, w)
			}
		}
	}
}
