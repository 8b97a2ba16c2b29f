package httpapi

// These tests keep openapi.json true to the code: the routes, the wire
// types' fields, the parameters, the error codes and the served copy. The
// document is read with plain encoding/json; Spec (below) is a small
// validator for the subset of JSON Schema the document uses, which the
// end-to-end tests (api_test.go) run on every response they get, so that a
// status, body shape or error code the document does not describe fails a
// test. The validator rejects any schema keyword it does not implement, so
// it never passes a body by ignoring part of its schema.

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

// ---- the document ----

// Spec is the parsed OpenAPI document, for tests.
type Spec struct {
	Doc map[string]any
}

var (
	specOnce sync.Once
	specDoc  map[string]any
	specErr  error
)

// LoadSpec parses the embedded document (once per test binary).
func LoadSpec(t testing.TB) *Spec {
	t.Helper()
	specOnce.Do(func() { specDoc, specErr = parseDoc(OpenAPI()) })
	if specErr != nil {
		t.Fatalf("openapi.json: %v", specErr)
	}
	return &Spec{Doc: specDoc}
}

func parseDoc(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return doc, nil
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

func (s *Spec) get(path ...string) any {
	var v any = s.Doc
	for _, p := range path {
		v = obj(v)[p]
	}
	return v
}

// resolve follows a local $ref ("#/components/...") to its target.
func (s *Spec) resolve(v any) (map[string]any, error) {
	m := obj(v)
	for i := 0; m != nil && m["$ref"] != nil; i++ {
		ref, _ := m["$ref"].(string)
		if !strings.HasPrefix(ref, "#/") || i > 10 {
			return nil, fmt.Errorf("unsupported $ref %q", ref)
		}
		target := s.get(strings.Split(ref[2:], "/")...)
		if target == nil {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
		m = obj(target)
	}
	if m == nil {
		return nil, fmt.Errorf("not an object: %v", v)
	}
	return m, nil
}

var httpMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

// operations returns the document's operations by "METHOD /path".
func (s *Spec) operations() map[string]map[string]any {
	ops := map[string]map[string]any{}
	for path, item := range obj(s.Doc["paths"]) {
		for _, m := range httpMethods {
			if op := obj(obj(item)[m]); op != nil {
				ops[strings.ToUpper(m)+" "+path] = op
			}
		}
	}
	return ops
}

// routeFor maps a request to its route in Routes, as the server's mux
// does; ok is false for paths that are not endpoints.
func routeFor(method, path string) (string, bool) {
	for _, route := range Routes {
		m, p, _ := strings.Cut(route, " ")
		if m == method && pathMatches(p, path) {
			// Exact segments win over wildcards, as in net/http.
			exact := route
			for _, other := range Routes {
				om, op, _ := strings.Cut(other, " ")
				if om == method && op == path {
					exact = other
				}
			}
			return exact, true
		}
	}
	return "", false
}

// CheckResponse checks one response of the server against the document:
// the status is documented for the route, the Content-Type is a
// documented one, a JSON body matches the schema, and an error's code is
// one the response lists in x-rota-error-codes. Requests that hit no route
// (unknown endpoints, wrong methods) are not operations and are skipped.
func (s *Spec) CheckResponse(t testing.TB, method, path string, status int, header http.Header, body []byte) {
	t.Helper()
	route, ok := routeFor(method, path)
	if !ok {
		return
	}
	op := s.operations()[route]
	if op == nil {
		t.Errorf("openapi: %s is a route but not in the document", route)
		return
	}
	raw := obj(op["responses"])[strconv.Itoa(status)]
	if raw == nil {
		t.Errorf("openapi: %s answered %d, which the document does not list (body %.300s)", route, status, body)
		return
	}
	resp, err := s.resolve(raw)
	if err != nil {
		t.Errorf("openapi: %s %d: %v", route, status, err)
		return
	}
	content := obj(resp["content"])
	if len(content) == 0 {
		if len(strings.TrimSpace(string(body))) != 0 {
			t.Errorf("openapi: %s %d has no documented content, but the body is %.300s", route, status, body)
		}
		return
	}
	ct, _, _ := strings.Cut(header.Get("Content-Type"), ";")
	media := obj(content[ct])
	if media == nil {
		t.Errorf("openapi: %s %d: Content-Type %q is not documented (documented: %v)", route, status, ct, keys(content))
		return
	}
	if ct != "application/json" {
		return
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Errorf("openapi: %s %d: body is not JSON: %v: %.300s", route, status, err, body)
		return
	}
	if err := s.Validate(media["schema"], v); err != nil {
		t.Errorf("openapi: %s %d: body does not match the documented schema: %v\nbody: %.1000s", route, status, err, body)
	}
	if codes, ok := resp["x-rota-error-codes"].([]any); ok {
		code := obj(obj(v)["error"])["code"]
		if !slices.Contains(codes, code) {
			t.Errorf("openapi: %s %d: error code %v is not among the documented %v", route, status, code, codes)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---- a validator for the document's subset of JSON Schema ----

// annotations are keywords that do not constrain values.
var annotations = map[string]bool{"description": true, "examples": true, "default": true, "title": true}

// Validate checks v (decoded with UseNumber) against schema.
func (s *Spec) Validate(schema any, v any) error { return s.validate(schema, v, "$") }

func (s *Spec) validate(schema any, v any, at string) error {
	if b, ok := schema.(bool); ok {
		if !b {
			return fmt.Errorf("%s: no value is allowed here", at)
		}
		return nil
	}
	m := obj(schema)
	if m == nil {
		return fmt.Errorf("%s: schema is not an object: %v", at, schema)
	}
	if ref, ok := m["$ref"]; ok {
		target, err := s.resolve(map[string]any{"$ref": ref})
		if err != nil {
			return fmt.Errorf("%s: %v", at, err)
		}
		if err := s.validate(target, v, at); err != nil {
			return err
		}
	}
	for _, k := range keys(m) {
		kw := m[k]
		if annotations[k] {
			continue
		}
		var err error
		switch k {
		case "$ref":
		case "type":
			err = checkType(kw, v, at)
		case "enum":
			if !slices.ContainsFunc(kw.([]any), func(e any) bool { return reflect.DeepEqual(e, v) }) {
				err = fmt.Errorf("%s: %v is not one of %v", at, v, kw)
			}
		case "const":
			if !reflect.DeepEqual(kw, v) {
				err = fmt.Errorf("%s: %v is not %v", at, v, kw)
			}
		case "properties":
			o, isObj := v.(map[string]any)
			if !isObj {
				continue
			}
			for name, sub := range obj(kw) {
				if pv, present := o[name]; present {
					if err := s.validate(sub, pv, at+"."+name); err != nil {
						return err
					}
				}
			}
		case "required":
			o, isObj := v.(map[string]any)
			if !isObj {
				continue
			}
			for _, name := range kw.([]any) {
				if _, present := o[name.(string)]; !present {
					err = fmt.Errorf("%s: required property %q is missing", at, name)
					break
				}
			}
		case "additionalProperties":
			o, isObj := v.(map[string]any)
			if !isObj {
				continue
			}
			props := obj(m["properties"])
			for _, name := range keys(o) {
				if _, known := props[name]; !known {
					if err := s.validate(kw, o[name], at+"."+name); err != nil {
						return fmt.Errorf("%s: property %q is not in the schema: %v", at, name, err)
					}
				}
			}
		case "items":
			a, isArr := v.([]any)
			if !isArr {
				continue
			}
			for i, e := range a {
				if err := s.validate(kw, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		case "minItems", "maxItems":
			a, isArr := v.([]any)
			if !isArr {
				continue
			}
			n, _ := kw.(json.Number).Int64()
			if (k == "minItems" && int64(len(a)) < n) || (k == "maxItems" && int64(len(a)) > n) {
				err = fmt.Errorf("%s: %d items violates %s %d", at, len(a), k, n)
			}
		case "minLength", "maxLength":
			str, isStr := v.(string)
			if !isStr {
				continue
			}
			n, _ := kw.(json.Number).Int64()
			l := int64(len([]rune(str)))
			if (k == "minLength" && l < n) || (k == "maxLength" && l > n) {
				err = fmt.Errorf("%s: length %d violates %s %d", at, l, k, n)
			}
		case "minimum", "maximum":
			num, isNum := v.(json.Number)
			if !isNum {
				continue
			}
			x, _ := new(big.Float).SetString(num.String())
			bound, _ := new(big.Float).SetString(kw.(json.Number).String())
			if c := x.Cmp(bound); (k == "minimum" && c < 0) || (k == "maximum" && c > 0) {
				err = fmt.Errorf("%s: %v violates %s %v", at, num, k, kw)
			}
		case "pattern":
			str, isStr := v.(string)
			if !isStr {
				continue
			}
			re, rerr := regexp.Compile(kw.(string))
			if rerr != nil {
				return fmt.Errorf("%s: pattern %q does not compile: %v", at, kw, rerr)
			}
			if !re.MatchString(str) {
				err = fmt.Errorf("%s: %q does not match %s", at, str, kw)
			}
		case "format":
			err = checkFormat(kw.(string), v, at)
		case "oneOf":
			matched := 0
			var errs []string
			for _, alt := range kw.([]any) {
				if e := s.validate(alt, v, at); e != nil {
					errs = append(errs, e.Error())
				} else {
					matched++
				}
			}
			if matched != 1 {
				err = fmt.Errorf("%s: matches %d of the oneOf alternatives, want exactly 1 (%s)", at, matched, strings.Join(errs, "; "))
			}
		default:
			return fmt.Errorf("%s: schema keyword %q is not supported by the test validator", at, k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func checkType(kw any, v any, at string) error {
	var types []string
	switch x := kw.(type) {
	case string:
		types = []string{x}
	case []any:
		for _, e := range x {
			types = append(types, e.(string))
		}
	}
	for _, typ := range types {
		switch x := v.(type) {
		case nil:
			if typ == "null" {
				return nil
			}
		case bool:
			if typ == "boolean" {
				return nil
			}
		case string:
			if typ == "string" {
				return nil
			}
		case []any:
			if typ == "array" {
				return nil
			}
		case map[string]any:
			if typ == "object" {
				return nil
			}
		case json.Number:
			if typ == "number" {
				return nil
			}
			if _, err := x.Int64(); typ == "integer" && err == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("%s: %s is not of type %v", at, short(v), kw)
}

func checkFormat(format string, v any, at string) error {
	switch format {
	case "date-time":
		if s, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				return fmt.Errorf("%s: %q is not an RFC 3339 date-time", at, s)
			}
		}
	case "int64":
		if n, ok := v.(json.Number); ok {
			if _, err := n.Int64(); err != nil {
				return fmt.Errorf("%s: %v is not an int64", at, n)
			}
		}
	default:
		return fmt.Errorf("%s: format %q is not supported by the test validator", at, format)
	}
	return nil
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		b = append(b[:80], "..."...)
	}
	return string(b)
}

// ---- (a) routes ----

func TestOpenAPIRoutes(t *testing.T) {
	spec := LoadSpec(t)
	got := keys(spec.operations())
	want := slices.Clone(Routes)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("the document's operations differ from httpapi.Routes\nonly in the document: %v\nonly in Routes: %v",
			diff(got, want), diff(want, got))
	}
	ids := map[string]string{}
	for route, op := range spec.operations() {
		id, _ := op["operationId"].(string)
		if id == "" {
			t.Errorf("%s: no operationId", route)
		} else if prev, dup := ids[id]; dup {
			t.Errorf("%s and %s share operationId %q", route, prev, id)
		}
		ids[id] = route
		if s, _ := op["summary"].(string); s == "" {
			t.Errorf("%s: no summary", route)
		}
		if s, _ := op["description"].(string); len(s) < 20 {
			t.Errorf("%s: no description of what it does", route)
		}
		if tags, _ := op["tags"].([]any); len(tags) == 0 {
			t.Errorf("%s: no tags", route)
		}
	}
}

func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// ---- (b) wire types ----

// A wire type's role decides what its schema's required list must be.
type role int

const (
	request  role = 1 << iota // a request body (or part of one)
	response                  // a response body (or part of one)
)

// wireTypes are the types whose JSON the document describes, by schema
// name. TestOpenAPIWireTypes fails when wire.go gains a struct that is not
// here.
var wireTypes = map[string]struct {
	typ  reflect.Type
	role role
}{
	"AddRequest":             {reflect.TypeFor[wire.AddRequest](), request},
	"AddBatchRequest":        {reflect.TypeFor[wire.AddBatchRequest](), request},
	"AddResponse":            {reflect.TypeFor[wire.AddResponse](), response},
	"AddBatchResponse":       {reflect.TypeFor[wire.AddBatchResponse](), response},
	"JobResponse":            {reflect.TypeFor[wire.JobResponse](), response},
	"DepsResponse":           {reflect.TypeFor[wire.DepsResponse](), response},
	"HistoryResponse":        {reflect.TypeFor[wire.HistoryResponse](), response},
	"ListResponse":           {reflect.TypeFor[wire.ListResponse](), response},
	"ResubmitRequest":        {reflect.TypeFor[wire.ResubmitRequest](), request},
	"UpdateRequest":          {reflect.TypeFor[wire.UpdateRequest](), request},
	"AcceptRequest":          {reflect.TypeFor[wire.AcceptRequest](), request},
	"AcceptResponse":         {reflect.TypeFor[wire.AcceptResponse](), response},
	"HeartbeatRequest":       {reflect.TypeFor[wire.HeartbeatRequest](), request},
	"HeartbeatResponse":      {reflect.TypeFor[wire.HeartbeatResponse](), response},
	"HeartbeatItem":          {reflect.TypeFor[wire.HeartbeatItem](), request},
	"HeartbeatBatchRequest":  {reflect.TypeFor[wire.HeartbeatBatchRequest](), request},
	"HeartbeatResult":        {reflect.TypeFor[wire.HeartbeatResult](), response},
	"HeartbeatBatchResponse": {reflect.TypeFor[wire.HeartbeatBatchResponse](), response},
	"FinishRequest":          {reflect.TypeFor[wire.FinishRequest](), request},
	"FailRequest":            {reflect.TypeFor[wire.FailRequest](), request},
	"SnoozeRequest":          {reflect.TypeFor[wire.SnoozeRequest](), request},
	"TokenRequest":           {reflect.TypeFor[wire.TokenRequest](), request},
	"FinishItem":             {reflect.TypeFor[wire.FinishItem](), request},
	"FinishBatchRequest":     {reflect.TypeFor[wire.FinishBatchRequest](), request},
	"ItemResult":             {reflect.TypeFor[wire.ItemResult](), response},
	"FinishBatchResponse":    {reflect.TypeFor[wire.FinishBatchResponse](), response},
	"StatsResponse":          {reflect.TypeFor[wire.StatsResponse](), response},
	"TypeConfig":             {reflect.TypeFor[wire.TypeConfig](), request | response},
	"TypesResponse":          {reflect.TypeFor[wire.TypesResponse](), response},
	"GroupConfig":            {reflect.TypeFor[wire.GroupConfig](), request | response},
	"GroupsResponse":         {reflect.TypeFor[wire.GroupsResponse](), response},
	"CreateTokenRequest":     {reflect.TypeFor[wire.CreateTokenRequest](), request},
	"CreateTokenResponse":    {reflect.TypeFor[wire.CreateTokenResponse](), response},
	"TokensResponse":         {reflect.TypeFor[wire.TokensResponse](), response},
	"LogRecord":              {reflect.TypeFor[wire.LogRecord](), request | response},
	"AppendLogsRequest":      {reflect.TypeFor[wire.AppendLogsRequest](), request},
	"AppendLogsResponse":     {reflect.TypeFor[wire.AppendLogsResponse](), response},
	"LogAttempt":             {reflect.TypeFor[wire.LogAttempt](), response},
	"LogsResponse":           {reflect.TypeFor[wire.LogsResponse](), response},
	"Token":                  {reflect.TypeFor[store.Token](), response},
	"Event":                  {reflect.TypeFor[wire.Event](), response},
	"BatchRequest":           {reflect.TypeFor[wire.BatchRequest](), request},
	"Batch":                  {reflect.TypeFor[wire.Batch](), response},
	"BatchResponse":          {reflect.TypeFor[wire.BatchResponse](), response},
	"BatchesResponse":        {reflect.TypeFor[wire.BatchesResponse](), response},
	"BatchCounts":            {reflect.TypeFor[store.BatchCounts](), response},
	"ErrorResponse":          {reflect.TypeFor[wire.ErrorResponse](), response},
	"Error":                  {reflect.TypeFor[wire.Error](), response},
	// The store's types, as they appear inside the bodies.
	"Job":          {reflect.TypeFor[store.Job](), response},
	"Count":        {reflect.TypeFor[store.Count](), response},
	"AttemptError": {reflect.TypeFor[store.AttemptError](), response},
	"HistoryEntry": {reflect.TypeFor[store.HistoryEntry](), response},
}

// jsonField is one field of a struct's JSON form.
type jsonField struct {
	name     string
	typ      reflect.Type
	optional bool // omitempty or omitzero
}

// jsonFields lists a struct's JSON fields as encoding/json sees them,
// with embedded structs' fields promoted (outer fields win).
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	seen := map[string]bool{}
	var walk func(t reflect.Type, depth int)
	walk = func(t reflect.Type, depth int) {
		var embedded []reflect.Type
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					embedded = append(embedded, ft)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			optional := false
			for _, o := range strings.Split(opts, ",") {
				optional = optional || o == "omitempty" || o == "omitzero"
			}
			out = append(out, jsonField{name: name, typ: f.Type, optional: optional})
		}
		for _, e := range embedded {
			walk(e, depth+1)
		}
	}
	walk(t, 0)
	return out
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[wire.Duration]()
	goDuration   = reflect.TypeFor[time.Duration]()
	rawType      = reflect.TypeFor[json.RawMessage]()
	textMarshal  = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
)

// schemaTypeOf is the JSON type a Go field encodes as ("" for any JSON).
func schemaTypeOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType, t == durationType,
		t == goDuration: // store.Job encodes its durations as strings
		return "string"
	case t == rawType:
		return ""
	case t.Implements(textMarshal):
		return "string"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return "?"
}

func TestOpenAPIWireTypes(t *testing.T) {
	spec := LoadSpec(t)
	schemas := obj(spec.get("components", "schemas"))

	// Every struct type declared in wire.go and batch.go is described.
	fset := token.NewFileSet()
	var decls []ast.Decl
	for _, name := range []string{"wire.go", "batch.go"} {
		f, err := parser.ParseFile(fset, filepath.Join("wire", name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, f.Decls...)
	}
	for _, decl := range decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, sp := range gd.Specs {
			ts := sp.(*ast.TypeSpec)
			if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() {
				if _, ok := wireTypes[ts.Name.Name]; !ok {
					t.Errorf("wire.go declares %s, which this test (wireTypes) and the document do not describe", ts.Name.Name)
				}
			}
		}
	}

	for _, name := range keys(wireTypes) {
		wt := wireTypes[name]
		raw := schemas[name]
		if raw == nil {
			t.Errorf("components.schemas has no %s", name)
			continue
		}
		schema := obj(raw)
		props := obj(schema["properties"])
		fields := jsonFields(wt.typ)
		var names, nonOptional []string
		for _, f := range fields {
			names = append(names, f.name)
			if !f.optional {
				nonOptional = append(nonOptional, f.name)
			}
		}
		sort.Strings(names)
		sort.Strings(nonOptional)
		if got := keys(props); !slices.Equal(got, names) {
			t.Errorf("%s: the schema's properties %v differ from the struct's JSON fields %v (only in the schema: %v; only in the struct: %v)",
				name, got, names, diff(got, names), diff(names, got))
		}
		var required []string
		for _, r := range toSlice(schema["required"]) {
			required = append(required, r.(string))
		}
		sort.Strings(required)
		for _, r := range required {
			if props[r] == nil {
				t.Errorf("%s: required field %q is not a property", name, r)
			}
		}
		if wt.role&response != 0 && wt.role&request == 0 && !slices.Equal(required, nonOptional) {
			// A response always carries its non-omitempty fields and may
			// leave out the others.
			t.Errorf("%s: required %v, but the fields always present are %v", name, required, nonOptional)
		}
		if wt.role&request != 0 {
			for _, r := range required {
				if !slices.Contains(nonOptional, r) {
					t.Errorf("%s: %q is required but its struct field is omitempty", name, r)
				}
			}
			if schema["additionalProperties"] != false {
				t.Errorf("%s: a request body must have additionalProperties: false (the server rejects unknown fields)", name)
			}
		}
		for _, f := range fields {
			p := props[f.name]
			if p == nil {
				continue
			}
			want := schemaTypeOf(f.typ)
			if want == "" {
				continue // json.RawMessage: the schema says which JSON it takes
			}
			target, err := spec.resolve(p)
			if err != nil {
				if len(obj(p)) == 0 { // {} is any JSON
					target = map[string]any{}
				} else {
					t.Errorf("%s.%s: %v", name, f.name, err)
					continue
				}
			}
			got, _ := target["type"].(string)
			if got != want {
				t.Errorf("%s.%s: schema type %q, but the Go field %s encodes as %q", name, f.name, got, f.typ, want)
			}
		}
	}
}

// checkKeywords reports schema keywords the validator does not implement.
func checkKeywords(t *testing.T, at string, schema any) {
	t.Helper()
	m := obj(schema)
	if m == nil {
		if _, isBool := schema.(bool); !isBool {
			t.Errorf("%s: schema is %v", at, schema)
		}
		return
	}
	for k, v := range m {
		switch k {
		case "$ref", "type", "enum", "const", "required", "minItems", "maxItems", "minLength", "maxLength",
			"minimum", "maximum", "pattern", "format":
		case "properties":
			for name, sub := range obj(v) {
				checkKeywords(t, at+"/properties/"+name, sub)
			}
		case "items", "additionalProperties":
			checkKeywords(t, at+"/"+k, v)
		case "oneOf":
			for i, sub := range toSlice(v) {
				checkKeywords(t, fmt.Sprintf("%s/oneOf/%d", at, i), sub)
			}
		default:
			if !annotations[k] {
				t.Errorf("%s: keyword %q is not supported by the test validator; add it there first", at, k)
			}
		}
	}
	if f, ok := m["format"].(string); ok && f != "date-time" && f != "int64" {
		t.Errorf("%s: format %q is not supported by the test validator", at, f)
	}
}

func toSlice(v any) []any { s, _ := v.([]any); return s }

// TestOpenAPIEnums checks the enums against the code's names.
func TestOpenAPIEnums(t *testing.T) {
	spec := LoadSpec(t)
	enum := func(name string) []string {
		var out []string
		for _, e := range toSlice(spec.get("components", "schemas", name, "enum")) {
			out = append(out, e.(string))
		}
		return out
	}
	var states, outcomes, endings []string
	for s := store.Pending; s.Valid(); s++ {
		states = append(states, s.String())
	}
	for o := store.Inserted; o <= store.Unchanged; o++ {
		outcomes = append(outcomes, o.String())
	}
	var misseds []string
	for m := store.MissedOnce; m <= store.MissedAll; m++ {
		misseds = append(misseds, m.String())
	}
	for e := store.Complete; e <= store.Cancel; e++ {
		endings = append(endings, e.String())
		if _, ok := wire.ParseEnding(e.String()); !ok {
			t.Errorf("ending %s has no wire name", e)
		}
	}
	codes := []string{wire.CodeInvalid, wire.CodeNotFound, wire.CodeWorkerConflict, wire.CodeCanceled, wire.CodeFinished, wire.CodeTooLarge,
		wire.CodeUnauthorized, wire.CodeForbidden, wire.CodeMethod, wire.CodeMediaType, wire.CodeTooMany, wire.CodeUnavailable, wire.CodeInternal}
	for _, c := range []struct {
		schema string
		want   []string
	}{{"State", states}, {"Outcome", outcomes}, {"Ending", endings}, {"ErrorCode", codes}, {"Missed", misseds}} {
		got := enum(c.schema)
		a, b := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(c.want))
		if !slices.Equal(a, b) {
			t.Errorf("%s enum is %v, want %v", c.schema, got, c.want)
		}
	}
	if wire.Endings() != len(endings) {
		t.Errorf("the wire has %d ending names, want %d", wire.Endings(), len(endings))
	}

	// The Duration pattern accepts what the server writes and reads.
	pattern := regexp.MustCompile(spec.get("components", "schemas", "Duration", "pattern").(string))
	for _, d := range []time.Duration{0, time.Nanosecond, 1500 * time.Microsecond, 1500 * time.Millisecond, 10 * time.Minute, 90 * time.Minute, 100 * time.Hour} {
		if s := d.String(); !pattern.MatchString(s) {
			t.Errorf("Duration pattern rejects %q, which the server writes", s)
		}
	}
	for _, s := range []string{"1.5s", "10m", "1h30m", ".5s", "0", "2us", "3µs"} {
		if _, err := time.ParseDuration(s); err != nil || !pattern.MatchString(s) {
			t.Errorf("%q: ParseDuration error %v, pattern match %v; want both to accept it", s, err, pattern.MatchString(s))
		}
	}
	for _, s := range []string{"5 minutes", "10", "1d", "s", ""} {
		if _, err := time.ParseDuration(s); err == nil || pattern.MatchString(s) {
			t.Errorf("%q: ParseDuration error %v, pattern match %v; want both to reject it", s, err, pattern.MatchString(s))
		}
	}
}

// ---- operations: bodies, parameters, responses, codes ----

// routeBodies names each route's request body schema ("" for none; "?"
// marks an optional body) and its success responses' schemas.
var routeBodies = map[string]struct {
	req     string
	success map[string]string // status → schema ("" for no content)
}{
	"GET /healthz":                 {"", map[string]string{"200": "HealthResponse"}},
	"GET /metrics":                 {"", map[string]string{"200": "text/plain"}},
	"GET /v1/openapi.json":         {"", map[string]string{"200": "object"}},
	"POST /v1/jobs":                {"oneOf AddRequest AddBatchRequest", map[string]string{"201": "AddResponse", "200": "oneOf AddResponse AddBatchResponse"}},
	"GET /v1/jobs":                 {"", map[string]string{"200": "ListResponse"}},
	"GET /v1/jobs/{id}":            {"", map[string]string{"200": "JobResponse"}},
	"GET /v1/jobs/{id}/deps":       {"", map[string]string{"200": "DepsResponse"}},
	"DELETE /v1/jobs/{id}":         {"", map[string]string{"204": ""}},
	"POST /v1/jobs/{id}/cancel":    {"", map[string]string{"200": "JobResponse"}},
	"GET /v1/jobs/{id}/history":    {"", map[string]string{"200": "HistoryResponse"}},
	"POST /v1/jobs/{id}/resubmit":  {"?ResubmitRequest", map[string]string{"200": "AddResponse"}},
	"PATCH /v1/jobs/{id}":          {"UpdateRequest", map[string]string{"200": "JobResponse"}},
	"POST /v1/jobs/{id}/heartbeat": {"HeartbeatRequest", map[string]string{"200": "HeartbeatResponse"}},
	"POST /v1/jobs/{id}/finish":    {"FinishRequest", map[string]string{"204": ""}},
	"POST /v1/jobs/{id}/fail":      {"FailRequest", map[string]string{"204": ""}},
	"POST /v1/jobs/{id}/snooze":    {"SnoozeRequest", map[string]string{"204": ""}},
	"POST /v1/jobs/{id}/release":   {"TokenRequest", map[string]string{"204": ""}},
	"GET /v1/jobs/{id}/logs":       {"", map[string]string{"200": "LogsResponse"}},
	"POST /v1/jobs/{id}/logs":      {"AppendLogsRequest", map[string]string{"200": "AppendLogsResponse"}},
	"POST /v1/accept":              {"AcceptRequest", map[string]string{"200": "AcceptResponse"}},
	"POST /v1/heartbeat":           {"HeartbeatBatchRequest", map[string]string{"200": "HeartbeatBatchResponse"}},
	"POST /v1/finish":              {"FinishBatchRequest", map[string]string{"200": "FinishBatchResponse"}},
	"POST /v1/batches":             {"BatchRequest", map[string]string{"201": "BatchResponse"}},
	"GET /v1/batches":              {"", map[string]string{"200": "BatchesResponse"}},
	"GET /v1/batches/{id}":         {"", map[string]string{"200": "BatchResponse"}},
	"POST /v1/batches/{id}/jobs":   {"AddBatchRequest", map[string]string{"200": "BatchResponse"}},
	"POST /v1/batches/{id}/close":  {"", map[string]string{"200": "BatchResponse"}},
	"GET /v1/stats":                {"", map[string]string{"200": "StatsResponse"}},
	"GET /v1/events":               {"", map[string]string{"200": "text/event-stream"}},
	"GET /v1/types":                {"", map[string]string{"200": "TypesResponse"}},
	"PUT /v1/types/{type}":         {"TypeConfig", map[string]string{"200": "TypeConfig"}},
	"GET /v1/groups":               {"", map[string]string{"200": "GroupsResponse"}},
	"PUT /v1/groups":               {"GroupConfig", map[string]string{"200": "GroupConfig"}},
	"GET /v1/tokens":               {"", map[string]string{"200": "TokensResponse"}},
	"POST /v1/tokens":              {"CreateTokenRequest", map[string]string{"201": "CreateTokenResponse"}},
	"DELETE /v1/tokens/{name}":     {"", map[string]string{}},
}

// schemaName describes a schema for comparison with routeBodies.
func schemaName(s any) string {
	m := obj(s)
	if ref, ok := m["$ref"].(string); ok {
		return strings.TrimPrefix(ref, "#/components/schemas/")
	}
	if alts, ok := m["oneOf"].([]any); ok {
		parts := []string{"oneOf"}
		for _, a := range alts {
			parts = append(parts, schemaName(a))
		}
		return strings.Join(parts, " ")
	}
	if typ, ok := m["type"].(string); ok {
		return typ
	}
	return fmt.Sprint(s)
}

// statusOfCode is the status the server answers each code with.
func statusOfCode(code string) int { return wire.StatusOf(code) }

func TestOpenAPIOperations(t *testing.T) {
	spec := LoadSpec(t)
	ops := spec.operations()
	for _, route := range Routes {
		op := ops[route]
		if op == nil {
			continue // TestOpenAPIRoutes reports it
		}
		want, ok := routeBodies[route]
		if !ok {
			t.Errorf("%s: not in routeBodies; add it", route)
			continue
		}
		method, path, _ := strings.Cut(route, " ")

		// Request body.
		rb := obj(op["requestBody"])
		switch {
		case want.req == "" && rb != nil:
			t.Errorf("%s: documents a request body, but the handler reads none", route)
		case want.req != "" && rb == nil:
			t.Errorf("%s: has no requestBody, want %s", route, want.req)
		case rb != nil:
			wantName, optional := strings.CutPrefix(want.req, "?")
			if req, _ := rb["required"].(bool); req == optional {
				t.Errorf("%s: requestBody.required is %v, want %v", route, req, !optional)
			}
			if got := schemaName(obj(obj(rb["content"])["application/json"])["schema"]); got != wantName {
				t.Errorf("%s: request body schema %q, want %q", route, got, wantName)
			}
		}

		// Success responses.
		responses := obj(op["responses"])
		for status, schema := range want.success {
			r, err := spec.resolve(responses[status])
			if err != nil {
				t.Errorf("%s: response %s: %v", route, status, err)
				continue
			}
			content := obj(r["content"])
			switch schema {
			case "":
				if content != nil {
					t.Errorf("%s %s: documents content, but the server sends none", route, status)
				}
			case "text/plain", "text/event-stream":
				if content[schema] == nil {
					t.Errorf("%s %s: content is %v, want %s", route, status, keys(content), schema)
				}
			default:
				if got := schemaName(obj(content["application/json"])["schema"]); got != schema {
					t.Errorf("%s %s: schema %q, want %q", route, status, got, schema)
				}
			}
		}

		// Error responses: the schema, codes that fit the status, and the
		// responses every route has.
		for status, raw := range responses {
			r, err := spec.resolve(raw)
			if err != nil {
				t.Errorf("%s %s: %v", route, status, err)
				continue
			}
			if desc, _ := r["description"].(string); desc == "" {
				t.Errorf("%s %s: no description", route, status)
			}
			code, _ := strconv.Atoi(status)
			codes, hasCodes := r["x-rota-error-codes"].([]any)
			if code < 400 {
				if hasCodes {
					t.Errorf("%s %s: a success response lists error codes", route, status)
				}
				continue
			}
			if !hasCodes || len(codes) == 0 {
				t.Errorf("%s %s: an error response must list its codes in x-rota-error-codes", route, status)
			}
			if got := schemaName(obj(obj(r["content"])["application/json"])["schema"]); got != "ErrorResponse" {
				t.Errorf("%s %s: error schema %q, want ErrorResponse", route, status, got)
			}
			for _, c := range codes {
				if s := statusOfCode(c.(string)); s != code {
					t.Errorf("%s %s: lists code %v, which the server answers with %d", route, status, c, s)
				}
			}
		}
		mustHave := func(statuses ...string) {
			for _, s := range statuses {
				if responses[s] == nil {
					t.Errorf("%s: response %s is not documented", route, s)
				}
			}
		}
		if route == "GET /healthz" {
			if sec, ok := op["security"].([]any); !ok || len(sec) != 0 {
				t.Errorf("%s: must be open (security: [])", route)
			}
		} else {
			if op["security"] != nil {
				t.Errorf("%s: overrides the document's security", route)
			}
			mustHave("401", "403", "429")
		}
		if strings.TrimPrefix(want.req, "?") != "" {
			mustHave("400", "413", "415")
		}
		if strings.Contains(path, "{id}") {
			mustHave("400")
		}

		// Path parameters match the path's wildcards.
		var wantPath []string
		for _, seg := range strings.Split(path, "/") {
			if strings.HasPrefix(seg, "{") {
				wantPath = append(wantPath, strings.Trim(seg, "{}"))
			}
		}
		params := map[string]map[string]any{}
		for _, src := range []any{spec.get("paths", path, "parameters"), op["parameters"]} {
			for _, p := range toSlice(src) {
				pm, err := spec.resolve(p)
				if err != nil {
					t.Errorf("%s: parameter: %v", route, err)
					continue
				}
				params[pm["in"].(string)+":"+pm["name"].(string)] = pm
			}
		}
		var gotPath, gotQuery []string
		for k, p := range params {
			in, name, _ := strings.Cut(k, ":")
			switch in {
			case "path":
				gotPath = append(gotPath, name)
				if p["required"] != true {
					t.Errorf("%s: path parameter %s must be required", route, name)
				}
			case "query":
				gotQuery = append(gotQuery, name)
			case "header":
				// The one header a route reads besides Authorization.
				if route != "GET /v1/events" || name != "Last-Event-ID" {
					t.Errorf("%s: parameter %s in header; the server reads no such header", route, name)
				}
			default:
				t.Errorf("%s: parameter %s in %s; the server reads none there", route, name, in)
			}
			if p["schema"] == nil {
				t.Errorf("%s: parameter %s has no schema", route, name)
			}
		}
		sort.Strings(gotPath)
		sort.Strings(wantPath)
		if !slices.Equal(gotPath, wantPath) {
			t.Errorf("%s: path parameters %v, want %v", route, gotPath, wantPath)
		}
		var wantQuery []string
		switch route {
		case "GET /v1/jobs":
			wantQuery = slices.Clone(listParams)
		case "GET /v1/events":
			wantQuery = []string{"job", "type", "running", "completed"}
		case "GET /v1/jobs/{id}":
			wantQuery = []string{"wait", "state"}
		case "GET /v1/jobs/{id}/logs":
			wantQuery = slices.Clone(logsParams)
		case "GET /v1/jobs/{id}/deps":
			wantQuery = []string{"limit"}
		case "GET /v1/batches":
			wantQuery = []string{"before", "limit"}
		}
		sort.Strings(gotQuery)
		sort.Strings(wantQuery)
		if !slices.Equal(gotQuery, wantQuery) {
			t.Errorf("%s: query parameters %v, want %v", route, gotQuery, wantQuery)
		}
		_ = method
	}

	// Every schema, response and parameter uses only what the validator
	// (and so the end-to-end tests) understands, and every $ref resolves.
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if _, err := spec.resolve(map[string]any{"$ref": ref}); err != nil {
					t.Errorf("%s: %v", at, err)
				}
			}
			for k, e := range x {
				walk(at+"/"+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s/%d", at, i), e)
			}
		}
	}
	walk("#", spec.Doc)
	for name, s := range obj(spec.get("components", "schemas")) {
		checkKeywords(t, "#/components/schemas/"+name, s)
	}
	for route, op := range ops {
		_, path, _ := strings.Cut(route, " ")
		for _, p := range append(toSlice(op["parameters"]), toSlice(spec.get("paths", path, "parameters"))...) {
			checkKeywords(t, route+" parameter", obj(p)["schema"])
		}
		for status, r := range obj(op["responses"]) {
			for media, c := range obj(obj(r)["content"]) {
				checkKeywords(t, route+" "+status+" "+media, obj(c)["schema"])
			}
		}
		for media, c := range obj(obj(op["requestBody"])["content"]) {
			checkKeywords(t, route+" request "+media, obj(c)["schema"])
		}
	}
	if sec := obj(spec.get("components", "securitySchemes", "bearerAuth")); sec["type"] != "http" || sec["scheme"] != "bearer" {
		t.Errorf("securitySchemes.bearerAuth is %v, want http bearer", sec)
	}
}

// TestOpenAPISchemasValidate runs the validator over sample bodies, so
// that its own mistakes (and the schemas') show here first.
func TestOpenAPISchemasValidate(t *testing.T) {
	spec := LoadSpec(t)
	ref := func(name string) any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	decode := func(s string) any {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return v
	}
	marshal := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return decode(string(b))
	}
	now := time.Now().UTC()
	job := store.Job{ID: 7, Type: "a", State: store.Running, RunAt: now, Data: json.RawMessage(`{}`), Attempt: 1, MaxAttempts: 3,
		BackoffBase: time.Second, BackoffMax: time.Hour, Token: "t", LeaseUntil: now, Progress: 12.5, Result: json.RawMessage(`[1]`),
		Errors: []store.AttemptError{{Attempt: 1, At: now, Error: "x"}}, CreatedAt: now, UpdatedAt: now}
	p := 50.0
	good := map[string]any{
		"Job":                    job,
		"AddResponse":            wire.AddResponse{Job: job, Outcome: store.Requeued},
		"AddBatchResponse":       wire.AddBatchResponse{Results: []wire.AddResponse{{Job: job, Outcome: store.Inserted}}},
		"ListResponse":           wire.ListResponse{Jobs: []store.Job{job}, NextCursor: "7"},
		"AcceptResponse":         wire.AcceptResponse{Jobs: []store.Job{}},
		"HeartbeatBatchResponse": wire.HeartbeatBatchResponse{Results: []wire.HeartbeatResult{{LeaseUntil: now}, {Error: &wire.Error{Code: wire.CodeCanceled, Message: "x"}}}},
		"FinishBatchResponse":    wire.FinishBatchResponse{Results: []wire.ItemResult{{}, {Error: &wire.Error{Code: wire.CodeWorkerConflict, Message: "x"}}}},
		"StatsResponse":          wire.StatsResponse{Counts: []store.Count{{Type: "a", State: store.Failed, Jobs: 2}}, ByState: map[string]int64{"pending": 0, "running": 0, "paused": 0, "completed": 0, "failed": 2, "cancelled": 0, "waiting": 0}},
		"DepsResponse": wire.DepsResponse{Deps: []store.Dep{{ID: 1, Type: "a", State: store.Completed, Result: json.RawMessage(`{"r":1}`)},
			{ID: 2, State: store.Cancelled, Removed: true}}, Dependants: []int64{3}},
		"Event":          wire.Event{ID: 1, Type: "a", State: store.Pending, RunAt: now, At: now},
		"TypesResponse":  wire.TypesResponse{Types: []wire.TypeConfig{{Type: "a", LeaseTimeout: wire.Duration(45 * time.Second), Bands: "2,1", GroupMaxRunning: 3}, {Type: "b"}}},
		"GroupsResponse": wire.GroupsResponse{Groups: []wire.GroupConfig{{Group: "", Weight: 2}, {Group: "acme", Type: "a", MaxRunning: 4}}},
		"AddRequest":     wire.NewAddRequest(store.AddParams{Type: "a", Key: "k", RunAt: now, Data: json.RawMessage(`{"x":1}`), BackoffBase: time.Second}),
		"AcceptRequest":  wire.AcceptRequest{Types: []string{"a.*"}, Limit: 5, Wait: wire.Duration(time.Second)},
		"FinishItem":     wire.NewFinishItem(store.FinishParams{Lease: store.Lease{ID: 1, Token: "t"}, As: store.Snooze, RunAt: now}),
		"HeartbeatItem":  wire.HeartbeatItem{ID: 1, Token: "t", Progress: &p},
		"ErrorResponse":  wire.ErrorResponse{Error: wire.Error{Code: wire.CodeInvalid, Message: "x"}},
	}
	for _, name := range keys(good) {
		if err := spec.Validate(ref(name), marshal(good[name])); err != nil {
			t.Errorf("%s: a body the server writes fails its schema: %v", name, err)
		}
	}
	bad := []struct{ schema, body string }{
		{"AddRequest", `{"type":"a","colour":"red"}`},
		{"AddRequest", `{"type":"a*"}`},
		{"AddRequest", `{"priority":1}`},
		{"AddRequest", `{"type":"a","data":[1]}`},
		{"AddRequest", `{"type":"a","priority":"high"}`},
		{"AddRequest", `{"type":"a","run_at":"tomorrow"}`},
		{"AddRequest", `{"type":"a","backoff_base":"5 minutes"}`},
		{"AcceptRequest", `{"types":"a"}`},
		{"AcceptRequest", `{"types":["a"],"limit":10001}`},
		{"FinishItem", `{"id":1,"token":"t","as":"explode"}`},
		{"HeartbeatRequest", `{"token":"t","progress":101}`},
		{"Job", `{"id":1}`},
		{"ErrorResponse", `{"error":{"code":"oops","message":"x"}}`},
	}
	for _, c := range bad {
		if err := spec.Validate(ref(c.schema), decode(c.body)); err == nil {
			t.Errorf("%s accepts %s, which the server rejects", c.schema, c.body)
		}
	}
}

// ---- (c) served ----

func TestOpenAPIServed(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := rota.NewClient(st, rota.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	api := New(c, Config{AuthToken: "sesame", Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(api.Close)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)

	req, _ := http.NewRequest("GET", ts.URL+"/v1/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer sesame")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %s: %s", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	doc, err := parseDoc(body)
	if err != nil {
		t.Fatalf("the served document: %v", err)
	}
	if v, _ := doc["openapi"].(string); !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(v) {
		t.Errorf("openapi is %q, want 3.1.x", v)
	}
	if !reflect.DeepEqual(doc, LoadSpec(t).Doc) {
		t.Errorf("the served document differs from the embedded one")
	}
	for _, k := range []string{"info", "paths", "components"} {
		if doc[k] == nil {
			t.Errorf("the document has no %s", k)
		}
	}
}
