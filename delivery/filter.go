package delivery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Limits of a field filter.
const (
	MaxFilterBytes      = 16 << 10
	MaxFilterConditions = 32
	MaxFilterPathDepth  = 16
	MaxFilterListValues = 256
)

// Operators of the field filter syntax.
const (
	OpEq     = "eq"
	OpNe     = "ne"
	OpIn     = "in"
	OpNin    = "nin"
	OpExists = "exists"
)

// FieldFilter is a compiled field filter on the event envelope. The syntax
// is one JSON object; every entry is a condition and all must hold:
//
//	{
//	  "data.agent_id": "a1",                        equality (shorthand for {"eq": "a1"})
//	  "data.status":   {"in": ["open", "held"]},    membership
//	  "data.region":   {"nin": ["eu"]},             non-membership
//	  "data.priority": {"ne": 0},                   inequality
//	  "data.trace":    {"exists": true}             presence
//	}
//
// Keys are dot paths into the event {"id","type","timestamp","data"}: the
// first segment is one of those four; a decimal segment indexes an array
// ("data.items.0.sku"). Keys containing a dot cannot be addressed.
//
// A bare array is refused as ambiguous: {"in": [...]} tests membership,
// {"eq": [...]} compares with an array. An operator object may combine operators ({"ne": 0, "exists": true}); all
// must hold. To compare with a literal object use {"eq": {...}}. Values are
// any JSON and compare by JSON value: numbers numerically (1 equals 1.0),
// objects and arrays deeply. A missing field is equal to nothing (so "ne"
// and "nin" hold for it); a field set to null equals null.
type FieldFilter struct {
	conds []fieldCondition // sorted by path
}

type fieldCondition struct {
	path string
	segs []string
	ops  []fieldOp // sorted by name
}

type fieldOp struct {
	name   string
	value  any   // eq, ne
	list   []any // in, nin
	exists bool  // exists
}

// ParseFieldFilter validates and compiles a field filter. Empty input, JSON
// null and {} give a nil filter, which matches everything. Errors are
// *ValidationError with CodeInvalidFilter and the offending key in Field.
func ParseFieldFilter(raw []byte) (*FieldFilter, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	if len(raw) > MaxFilterBytes {
		return nil, invalid(CodeInvalidFilter, "filter", "filter is %d bytes, over the limit of %d", len(raw), MaxFilterBytes)
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, &ValidationError{Code: CodeInvalidFilter, Field: "filter", Message: "filter is not valid JSON", Err: err}
	}
	if v == nil {
		return nil, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, invalid(CodeInvalidFilter, "filter", "filter must be a JSON object of \"path\": condition")
	}
	if len(obj) == 0 {
		return nil, nil
	}
	if len(obj) > MaxFilterConditions {
		return nil, invalid(CodeInvalidFilter, "filter", "%d conditions, over the limit of %d", len(obj), MaxFilterConditions)
	}
	f := &FieldFilter{}
	for path, cond := range obj {
		c, err := parseCondition(path, cond)
		if err != nil {
			return nil, err
		}
		f.conds = append(f.conds, c)
	}
	slices.SortFunc(f.conds, func(a, b fieldCondition) int { return strings.Compare(a.path, b.path) })
	return f, nil
}

func parseCondition(path string, cond any) (fieldCondition, error) {
	field := "filter." + path
	segs := strings.Split(path, ".")
	switch {
	case path == "":
		return fieldCondition{}, invalid(CodeInvalidFilter, "filter", "empty path")
	case len(segs) > MaxFilterPathDepth:
		return fieldCondition{}, invalid(CodeInvalidFilter, field, "path is deeper than %d segments", MaxFilterPathDepth)
	case slices.Contains(segs, ""):
		return fieldCondition{}, invalid(CodeInvalidFilter, field, "path has an empty segment")
	}
	switch segs[0] {
	case "id", "type", "timestamp", "data":
	default:
		return fieldCondition{}, invalid(CodeInvalidFilter, field, "path must start with id, type, timestamp or data (\"data.%s\"?)", path)
	}
	if segs[0] != "data" && len(segs) > 1 {
		return fieldCondition{}, invalid(CodeInvalidFilter, field, "%s is a string and has no fields", segs[0])
	}
	c := fieldCondition{path: path, segs: segs}
	if _, isList := cond.([]any); isList {
		return fieldCondition{}, invalid(CodeInvalidFilter, field, "use {\"in\": [...]} for membership, or {\"eq\": [...]} to compare with an array")
	}
	opsObj, isObj := cond.(map[string]any)
	if !isObj {
		c.ops = []fieldOp{{name: OpEq, value: cond}}
		return c, nil
	}
	if len(opsObj) == 0 {
		return fieldCondition{}, invalid(CodeInvalidFilter, field, "empty operator object; use {\"eq\": {}} to match an empty object")
	}
	for name, arg := range opsObj {
		op := fieldOp{name: name}
		switch name {
		case OpEq, OpNe:
			op.value = arg
		case OpIn, OpNin:
			list, ok := arg.([]any)
			if !ok {
				return fieldCondition{}, invalid(CodeInvalidFilter, field, "%q takes an array of values", name)
			}
			if len(list) == 0 {
				return fieldCondition{}, invalid(CodeInvalidFilter, field, "%q needs at least one value", name)
			}
			if len(list) > MaxFilterListValues {
				return fieldCondition{}, invalid(CodeInvalidFilter, field, "%q has %d values, over the limit of %d", name, len(list), MaxFilterListValues)
			}
			op.list = list
		case OpExists:
			b, ok := arg.(bool)
			if !ok {
				return fieldCondition{}, invalid(CodeInvalidFilter, field, "\"exists\" takes true or false")
			}
			op.exists = b
		default:
			return fieldCondition{}, invalid(CodeInvalidFilter, field, "unknown operator %q (known: eq, ne, in, nin, exists)", name)
		}
		c.ops = append(c.ops, op)
	}
	slices.SortFunc(c.ops, func(a, b fieldOp) int { return strings.Compare(a.name, b.name) })
	return c, nil
}

// MarshalJSON writes the filter in canonical form: every condition as an
// operator object, keys sorted. Parsing it gives an equivalent filter.
func (f *FieldFilter) MarshalJSON() ([]byte, error) {
	if f == nil {
		return []byte("null"), nil
	}
	out := make(map[string]map[string]any, len(f.conds))
	for _, c := range f.conds {
		ops := make(map[string]any, len(c.ops))
		for _, op := range c.ops {
			switch op.name {
			case OpEq, OpNe:
				ops[op.name] = op.value
			case OpIn, OpNin:
				ops[op.name] = op.list
			case OpExists:
				ops[op.name] = op.exists
			}
		}
		out[c.path] = ops
	}
	return json.Marshal(out)
}

// Match reports whether every condition holds for doc, the event as a
// decoded JSON object (see Target).
func (f *FieldFilter) Match(doc map[string]any) bool {
	if f == nil {
		return true
	}
	for _, c := range f.conds {
		v, found := lookup(doc, c.segs)
		for _, op := range c.ops {
			if !op.holds(v, found) {
				return false
			}
		}
	}
	return true
}

func (op fieldOp) holds(v any, found bool) bool {
	switch op.name {
	case OpEq:
		return found && jsonEqual(v, op.value)
	case OpNe:
		return !found || !jsonEqual(v, op.value)
	case OpIn:
		return found && containsJSON(op.list, v)
	case OpNin:
		return !found || !containsJSON(op.list, v)
	case OpExists:
		return found == op.exists
	}
	return false
}

// lookup follows a path through decoded JSON.
func lookup(doc any, segs []string) (any, bool) {
	cur := doc
	for _, s := range segs {
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[s]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(node) || (len(s) > 1 && s[0] == '0') {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func containsJSON(list []any, v any) bool {
	for _, w := range list {
		if jsonEqual(v, w) {
			return true
		}
	}
	return false
}

// jsonEqual compares decoded JSON values (numbers as json.Number).
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numbersEqual(x, y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// numbersEqual compares JSON numbers exactly when both are integers that fit
// in int64, else as float64.
func numbersEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	ai, aErr := strconv.ParseInt(string(a), 10, 64)
	bi, bErr := strconv.ParseInt(string(b), 10, 64)
	if aErr == nil && bErr == nil {
		return ai == bi
	}
	af, aErr := strconv.ParseFloat(string(a), 64)
	bf, bErr := strconv.ParseFloat(string(b), 64)
	if (aErr != nil && !errors.Is(aErr, strconv.ErrRange)) || (bErr != nil && !errors.Is(bErr, strconv.ErrRange)) {
		return false
	}
	return af == bf
}

// decodeJSON decodes one JSON value with numbers kept as json.Number and
// refuses trailing data.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}
