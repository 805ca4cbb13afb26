package argschema_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/seahaven/seahaven/internal/argschema"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/schema")

func TestSchema(t *testing.T) {
	for _, tt := range []struct {
		name string       // golden file testdata/schema/<name>.json
		typ  reflect.Type // type whose schema is derived
	}{
		{"rich", reflect.TypeFor[RichArgs]()},
		{"embedded", reflect.TypeFor[Embedded]()},
		{"charge", reflect.TypeFor[ChargeArgs]()},
		{"charge_pointer", reflect.TypeFor[*ChargeArgs]()},
		{"defaults", reflect.TypeFor[Defaults]()},
		{"empty", reflect.TypeFor[struct{}]()},
		{"nullable", reflect.TypeFor[struct {
			P  **int               `json:"p" enum:"1,2"`
			T  *time.Time          `json:"t"`
			R  *json.RawMessage    `json:"r"`
			S  []*Item             `json:"s"`
			M  map[string]*float32 `json:"m" doc:"Scores."`
			U  uint64              `json:"u" max:"18446744073709551615"`
			I8 int8                `json:"i8" min:"-128" enum:"-128, 0, 1e2"`
			I  int64               `json:"i" min:"-9223372036854775808" max:"9223372036854775807"`
			F  float32             `json:"f" enum:"0.1,1e10"`
		}]()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := argschema.Schema(tt.typ)
			if err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, got); err != nil {
				t.Fatalf("schema is not JSON: %v\n%s", err, got)
			}
			if !bytes.Equal(compact.Bytes(), got) {
				t.Errorf("schema is not compact:\n%s", got)
			}
			again, err := argschema.Schema(tt.typ)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("second call differs: %s, %v", again, err)
			}
			path := filepath.Join("testdata", "schema", tt.name+".json")
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if want = bytes.TrimSuffix(want, []byte("\n")); !bytes.Equal(got, want) {
				t.Errorf("schema differs from %s:\ngot  %s\nwant %s", path, got, want)
			}
		})
	}
}

// TestSchema_CallerOwnsResult checks that changing a returned schema does
// not change the next one.
func TestSchema_CallerOwnsResult(t *testing.T) {
	typ := reflect.TypeFor[ChargeArgs]()
	first, err := argschema.Schema(typ)
	if err != nil {
		t.Fatal(err)
	}
	want := string(first)
	first[0] = 'X'
	second, err := argschema.Schema(typ)
	if err != nil {
		t.Fatal(err)
	}
	if string(second) != want {
		t.Errorf("got %s, want %s", second, want)
	}
}

// TestSchema_MatchesEncodingJSON checks that the property names are the
// names encoding/json gives the same fields.
func TestSchema_MatchesEncodingJSON(t *testing.T) {
	for _, v := range []any{
		Embedded{B: &B{}},
		RichArgs{
			Base: Base{RequestID: "r"}, Note: new(string), Priority: new(int), Rate: 1,
			Due: time.Unix(1, 0), Receipt: []byte("x"), Tags: map[string]string{"a": "b"},
			Extra: json.RawMessage("1"), Any: 1, Matrix: [][]float64{{1}}, Options: &Options{},
		},
	} {
		typ := reflect.TypeOf(v)
		t.Run(typ.Name(), func(t *testing.T) {
			raw, err := argschema.Schema(typ)
			if err != nil {
				t.Fatal(err)
			}
			var schema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			if err := json.Unmarshal(raw, &schema); err != nil {
				t.Fatal(err)
			}
			enc, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(enc, &fields); err != nil {
				t.Fatal(err)
			}
			for name := range fields {
				if _, ok := schema.Properties[name]; !ok {
					t.Errorf("encoding/json writes %q, which the schema lacks", name)
				}
			}
			for name := range schema.Properties {
				if _, ok := fields[name]; !ok {
					t.Errorf("the schema lists %q, which encoding/json does not write", name)
				}
			}
		})
	}
}

type Recursive struct {
	Name     string      `json:"name"`
	Children []Recursive `json:"children"`
}

type RecursiveViaPointer struct {
	Next *RecursiveViaPointer `json:"next"`
}

type MutualA struct {
	B *MutualB `json:"b"`
}

type MutualB struct {
	As map[string]MutualA `json:"as"`
}

type Marshals struct{ _ int }

func (m Marshals) MarshalJSON() ([]byte, error) { return []byte("1"), nil }

type embeddedPtr struct {
	V int `json:"v"`
}

type HasUnexportedEmbeddedPtr struct {
	*embeddedPtr
}

func TestSchema_Errors(t *testing.T) {
	for _, tt := range []struct {
		name string       // what is wrong
		typ  reflect.Type // type to derive
		want string       // exact error text
	}{
		{"NilType", nil, "argschema: nil type"},
		{"NotStruct", reflect.TypeFor[int](), "argschema: int is not a struct type or a pointer to one"},
		{"PointerToPointer", reflect.TypeFor[**ChargeArgs](), "argschema: **argschema_test.ChargeArgs is not a struct type or a pointer to one"},
		{"Chan", reflect.TypeFor[struct {
			C chan int `json:"c"`
		}](), "argschema: struct { C chan int \"json:\\\"c\\\"\" } field C: unsupported type chan int"},
		{"FuncInSlice", reflect.TypeFor[struct{ F []func() }](), "argschema: struct { F []func() } field F[]: unsupported type func()"},
		{"Complex", reflect.TypeFor[struct{ X complex128 }](), "argschema: struct { X complex128 } field X: unsupported type complex128"},
		{"Array", reflect.TypeFor[struct{ X [2]int }](), "argschema: struct { X [2]int } field X: unsupported type [2]int"},
		{"IntKeys", reflect.TypeFor[struct{ M map[int]string }](), "argschema: struct { M map[int]string } field M: unsupported type map[int]string: map keys must be strings"},
		// A key type with its own text encoding: the names the schema
		// allows would decode to other keys, or fail.
		{"TextKeys", reflect.TypeFor[struct{ M map[prefixedKey]int }](), "argschema: struct { M map[argschema_test.prefixedKey]int } field M key: type argschema_test.prefixedKey implements encoding.TextUnmarshaler; argument types must be plain data"},
		{"NonEmptyInterface", reflect.TypeFor[struct{ E error }](), "argschema: struct { E error } field E: unsupported type error: only the empty interface can hold arguments"},
		{"Recursive", reflect.TypeFor[Recursive](), "argschema: argschema_test.Recursive: computing element schema: cycle detected for type argschema_test.Recursive"},
		{"RecursiveViaPointer", reflect.TypeFor[RecursiveViaPointer](), "argschema: argschema_test.RecursiveViaPointer: cycle detected for type argschema_test.RecursiveViaPointer"},
		{"Mutual", reflect.TypeFor[MutualA](), "argschema: argschema_test.MutualA: computing map value schema: cycle detected for type argschema_test.MutualA"},
		{"Marshaler", reflect.TypeFor[struct{ M Marshals }](), "argschema: struct { M argschema_test.Marshals } field M: type argschema_test.Marshals implements json.Marshaler; argument types must be plain data"},
		{"TextMarshaler", reflect.TypeFor[struct{ IP []netip.Addr }](), "argschema: struct { IP []netip.Addr } field IP[]: type netip.Addr implements encoding.TextMarshaler; argument types must be plain data"},
		{"PointerMethods", reflect.TypeFor[struct{ N *big.Int }](), "argschema: struct { N *big.Int } field N: type big.Int implements json.Marshaler; argument types must be plain data"},
		{"StringOption", reflect.TypeFor[struct {
			N int `json:"n,string"`
		}](), "argschema: struct { N int \"json:\\\"n,string\\\"\" } field N: the json tag option \"string\" is not supported"},
		{"InvalidName", reflect.TypeFor[struct {
			//lint:ignore SA5008 the malformed tag is what this case tests
			N int `json:"a\\b"`
		}](), "argschema: struct { N int \"json:\\\"a\\\\\\\\b\\\"\" }: Go struct field N has malformed `json` tag: invalid character '\\\\' before next option (expecting ',') (tag `json:\"a\\\\b\"`)"},
		{"EnumOnBool", reflect.TypeFor[struct {
			B bool `enum:"true"`
		}](), "argschema: struct { B bool \"enum:\\\"true\\\"\" } field B: the enum tag needs a string or number field, not bool"},
		{"EnumEmpty", reflect.TypeFor[struct {
			S string `enum:"a,,b"`
		}](), "argschema: struct { S string \"enum:\\\"a,,b\\\"\" } field S: enum \"a,,b\" has an empty value"},
		{"EnumTwice", reflect.TypeFor[struct {
			N int `enum:"1,1.0"`
		}](), "argschema: struct { N int \"enum:\\\"1,1.0\\\"\" } field N: enum \"1,1.0\" lists 1 twice"},
		{"EnumOutOfRange", reflect.TypeFor[struct {
			N uint8 `enum:"1,256"`
		}](), "argschema: struct { N uint8 \"enum:\\\"1,256\\\"\" } field N: enum value \"256\": number 256 is out of range for uint8"},
		{"MinOnString", reflect.TypeFor[struct {
			S string `min:"1"`
		}](), "argschema: struct { S string \"min:\\\"1\\\"\" } field S: the min tag needs a number field, not string"},
		{"MaxNotNumber", reflect.TypeFor[struct {
			N float64 `max:"ten"`
		}](), "argschema: struct { N float64 \"max:\\\"ten\\\"\" } field N: max \"ten\": not a JSON number"},
		{"MinAboveMax", reflect.TypeFor[struct {
			N int `min:"5" max:"1"`
		}](), "argschema: struct { N int \"min:\\\"5\\\" max:\\\"1\\\"\" } field N: min 5 is greater than max 1"},
		{"MinAboveMaxPast2to53", reflect.TypeFor[struct {
			N int64 `min:"9007199254740993" max:"9007199254740992"`
		}](), "argschema: struct { N int64 \"min:\\\"9007199254740993\\\" max:\\\"9007199254740992\\\"\" } field N: min 9007199254740993 is greater than max 9007199254740992"},
		{"MaxlenOnInt", reflect.TypeFor[struct {
			N int `maxlen:"3"`
		}](), "argschema: struct { N int \"maxlen:\\\"3\\\"\" } field N: the maxlen tag needs a string field, not int"},
		{"MaxlenNegative", reflect.TypeFor[struct {
			S string `maxlen:"-1"`
		}](), "argschema: struct { S string \"maxlen:\\\"-1\\\"\" } field S: maxlen \"-1\" is not a non-negative integer"},
		{"DefaultWrongType", reflect.TypeFor[struct {
			N int `default:"abc"`
		}](), "argschema: struct { N int \"default:\\\"abc\\\"\" } field N: default \"abc\": malformed JSON at byte 0: invalid character 'a' at start of value"},
		{"DefaultBase64LineBreak", reflect.TypeFor[struct {
			B []byte `json:"b" default:"AQ\nID"`
		}](), `argschema: struct { B []uint8 "json:\"b\" default:\"AQ\\nID\"" } field B: default "AQ\nID": invalid base64: a line break at byte 2`},
		{"DefaultNotInEnum", reflect.TypeFor[struct {
			S string `enum:"a,b" default:"c"`
		}](), "argschema: struct { S string \"enum:\\\"a,b\\\" default:\\\"c\\\"\" } field S: default \"c\": value \"c\" is not one of \"a\", \"b\""},
		{"DefaultBelowMin", reflect.TypeFor[struct {
			N *int `min:"1" default:"0"`
		}](), "argschema: struct { N *int \"min:\\\"1\\\" default:\\\"0\\\"\" } field N: default \"0\": value 0 is less than minimum 1"},
		{"DefaultStructMissingField", reflect.TypeFor[struct {
			I Item `default:"{\"sku\":\"x\"}"`
		}](), "argschema: struct { I argschema_test.Item \"default:\\\"{\\\\\\\"sku\\\\\\\":\\\\\\\"x\\\\\\\"}\\\"\" } field I: default \"{\\\"sku\\\":\\\"x\\\"}\": missing required field \"qty\""},
		{"DefaultTime", reflect.TypeFor[struct {
			T time.Time `default:"today"`
		}](), "argschema: struct { T time.Time \"default:\\\"today\\\"\" } field T: default \"today\": expected an RFC 3339 date-time, got \"today\""},
		// json v2 refuses a struct with fields but no exported one and no
		// json tag when an argument first holds one, deep in as well.
		{"NestedNoExportedFields", reflect.TypeFor[struct {
			Items []struct{ n int }
		}](), "argschema: struct { Items []struct { n int } } field Items[]: Go struct has no exported fields"},
		{"NestedPointerNoExportedFields", reflect.TypeFor[struct {
			M map[string]*struct{ n int }
		}](), "argschema: struct { M map[string]*struct { n int } } field M[]: Go struct has no exported fields"},
		{"CaseOption", reflect.TypeFor[struct {
			N int `json:"n,case:ignore"`
		}](), "argschema: struct { N int \"json:\\\"n,case:ignore\\\"\" } field N: the json tag option \"case:ignore\" is not supported"},
		{"EmbeddedWithName", reflect.TypeFor[struct {
			Item `json:"item"`
		}](), "argschema: struct { argschema_test.Item \"json:\\\"item\\\"\" } field Item: an embedded field must be an untagged struct"},
		{"UnexportedWithDoc", reflect.TypeFor[struct {
			N    int    `json:"n"`
			note string `doc:"A note."`
		}](), "argschema: struct { N int \"json:\\\"n\\\"\"; note string \"doc:\\\"A note.\\\"\" } field note: it has a doc tag, but it is unexported, so no argument fills it: export it, or drop the tag"},
		{"SkippedWithDefault", reflect.TypeFor[struct {
			S string `json:"-" default:"x"`
		}](), "argschema: struct { S string \"json:\\\"-\\\" default:\\\"x\\\"\" } field S: it has a default tag, but its json tag is \"-\", so no argument fills it: give it a json name, or drop the tag"},
		{"UnexportedEmbeddedPointer", reflect.TypeFor[HasUnexportedEmbeddedPtr](), "argschema: argschema_test.HasUnexportedEmbeddedPtr field embeddedPtr.V: cannot set a field reached through the embedded pointer embeddedPtr to an unexported struct type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := argschema.Schema(tt.typ)
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tt.want {
				t.Errorf("error\ngot  %s\nwant %s", err, tt.want)
			}
			// Decode refuses the type with the same error.
			if _, derr := argschema.Decode(tt.typ, []byte(`{}`)); derr == nil || derr.Error() != err.Error() {
				t.Errorf("Decode error %v, want %v", derr, err)
			}
		})
	}
}

// prefixedKey is a string map key that decodes itself.
type prefixedKey string

func (k *prefixedKey) UnmarshalText(b []byte) error {
	*k = prefixedKey("X" + string(b))
	return nil
}
