package config

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// fill sets every field of v, recursively, to a value of its own (non-zero).
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.String:
		v.SetString("s" + strings.Repeat("x", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int:
		v.SetInt(int64(*n))
	case reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), n)
		v.Set(s)
	default:
		panic("fill: a field of kind " + v.Kind().String())
	}
}

// The profile's wire schema is its JSON names: every field has one, in
// snake case (so no Go name is the protocol), no two alike, and a profile
// with every field set comes back from its JSON the same.
func TestProfileWireSchema(t *testing.T) {
	var p Profile
	n := 0
	fill(reflect.ValueOf(&p).Elem(), &n)
	b, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	var back Profile
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, back) {
		t.Fatalf("the profile did not survive its JSON:\n%s", b)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	seen := map[string]bool{}
	var walk func(ty reflect.Type, at string)
	walk = func(ty reflect.Type, at string) {
		for i := range ty.NumField() {
			f := ty.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !snake.MatchString(name) {
				t.Errorf("%s%s: json name %q", at, f.Name, name)
			}
			if seen[name] && !f.Anonymous {
				t.Errorf("%s%s: json name %q twice", at, f.Name, name)
			}
			seen[name] = true
			if f.Anonymous {
				walk(f.Type, f.Name+".")
			}
		}
	}
	walk(reflect.TypeOf(p), "")
}
