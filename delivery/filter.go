package delivery

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Limits of a field filter.
const (
	MaxFilterBytes = 16 << 10
	// MaxFilterConditions bounds the conditions of a whole filter, nested
	// ones included.
	MaxFilterConditions = 32
	MaxFilterPathDepth  = 16
	MaxFilterListValues = 256
	// MaxFilterNesting bounds how deep and / or / not nest.
	MaxFilterNesting = 8
	// MaxFilterRegexBytes bounds a regex pattern. Patterns are RE2, so a
	// match takes time linear in the field's length whatever the pattern.
	MaxFilterRegexBytes = 512
)

// Operators of the field filter syntax.
const (
	OpEq     = "eq"
	OpNe     = "ne"
	OpIn     = "in"
	OpNin    = "nin"
	OpExists = "exists"
	OpGt     = "gt"
	OpGte    = "gte"
	OpLt     = "lt"
	OpLte    = "lte"
	OpPrefix = "prefix"
	OpRegex  = "regex"
)

// Combinators of the field filter syntax: keys of a filter object beside
// the paths (a path starts with id, type, timestamp or data, so they
// cannot collide).
const (
	CombAnd = "and"
	CombOr  = "or"
	CombNot = "not"
)

// FieldFilter is a compiled field filter on the event envelope. The syntax
// is one JSON object; every entry is a condition and all must hold:
//
//	{
//	  "data.agent_id": "a1",                        equality (shorthand for {"eq": "a1"})
//	  "data.status":   {"in": ["open", "held"]},    membership
//	  "data.region":   {"nin": ["eu"]},             non-membership
//	  "data.priority": {"ne": 0},                   inequality
//	  "data.trace":    {"exists": true},            presence
//	  "data.amount":   {"gte": 100, "lt": 1000},    order: numbers, or strings
//	  "type":          {"prefix": "invoice."},      string prefix
//	  "data.email":    {"regex": "@example\\.com$"}, RE2 regular expression
//	  "or":  [{"data.tier": "gold"}, {"data.amount": {"gt": 5000}}],
//	  "and": [{...}, {...}],                        every nested filter holds
//	  "not": {"data.test": true}                    the nested filter does not hold
//	}
//
// Keys are dot paths into the event {"id","type","timestamp","data"}: the
// first segment is one of those four; a decimal segment indexes an array
// ("data.items.0.sku"). Keys containing a dot cannot be addressed.
//
// A bare array is refused as ambiguous: {"in": [...]} tests membership,
// {"eq": [...]} compares with an array. An operator object may combine
// operators ({"ne": 0, "exists": true}); all must hold. To compare with a
// literal object use {"eq": {...}}. Values are any JSON and compare by
// JSON value: numbers numerically (1 equals 1.0), objects and arrays
// deeply. A missing field is equal to nothing (so "ne" and "nin" hold for
// it); a field set to null equals null. The order operators compare a
// number with a number and a string with a string (byte order, which is
// time order for RFC 3339 timestamps in one zone); any other field, or a
// missing one, fails them. "prefix" and "regex" hold only for strings.
type FieldFilter struct {
	root filterNode
}

// filterNode is one filter object: its conditions, and its nested
// filters.
type filterNode struct {
	conds []fieldCondition // sorted by path; all must hold
	and   []filterNode     // all must hold
	or    []filterNode     // one must hold, when there are any
	not   *filterNode      // must not hold
}

type fieldCondition struct {
	path string
	segs []string
	ops  []fieldOp // sorted by name
}

type fieldOp struct {
	name   string
	value  any            // eq, ne, gt, gte, lt, lte; the pattern of regex
	list   []any          // in, nin
	exists bool           // exists
	prefix string         // prefix
	re     *regexp.Regexp // regex
}

// ParseFieldFilter validates and compiles a field filter. Empty input, JSON
// null and {} give a nil filter, which matches everything. Errors are
// *ValidationError with CodeInvalidFilter and the offending key in Field.
func ParseFieldFilter(raw []byte) (*FieldFilter, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	if len(raw) > MaxFilterBytes {
		return nil, Invalid(CodeInvalidFilter, "filter", "filter is %d bytes, over the limit of %d", len(raw), MaxFilterBytes)
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
		return nil, Invalid(CodeInvalidFilter, "filter", "filter must be a JSON object of \"path\": condition")
	}
	if len(obj) == 0 {
		return nil, nil
	}
	p := filterParser{}
	root, err := p.node(obj, "filter", 0)
	if err != nil {
		return nil, err
	}
	return &FieldFilter{root: root}, nil
}

// filterParser counts the conditions of the whole filter as it parses.
type filterParser struct {
	conditions int
}

func (p *filterParser) node(obj map[string]any, field string, depth int) (filterNode, error) {
	var n filterNode
	for key, arg := range obj {
		switch key {
		case CombAnd, CombOr:
			list, ok := arg.([]any)
			if !ok || len(list) == 0 {
				return n, Invalid(CodeInvalidFilter, field+"."+key, "%q takes a non-empty array of filter objects", key)
			}
			for i, sub := range list {
				child, err := p.nested(sub, fmt.Sprintf("%s.%s.%d", field, key, i), depth)
				if err != nil {
					return n, err
				}
				if key == CombAnd {
					n.and = append(n.and, child)
				} else {
					n.or = append(n.or, child)
				}
			}
		case CombNot:
			child, err := p.nested(arg, field+"."+key, depth)
			if err != nil {
				return n, err
			}
			n.not = &child
		default:
			p.conditions++
			if p.conditions > MaxFilterConditions {
				return n, Invalid(CodeInvalidFilter, "filter", "over the limit of %d conditions", MaxFilterConditions)
			}
			c, err := parseCondition(key, arg)
			if err != nil {
				return n, err
			}
			n.conds = append(n.conds, c)
		}
	}
	slices.SortFunc(n.conds, func(a, b fieldCondition) int { return strings.Compare(a.path, b.path) })
	return n, nil
}

// nested parses a filter object inside and / or / not.
func (p *filterParser) nested(v any, field string, depth int) (filterNode, error) {
	if depth+1 > MaxFilterNesting {
		return filterNode{}, Invalid(CodeInvalidFilter, field, "and / or / not nest deeper than %d", MaxFilterNesting)
	}
	obj, ok := v.(map[string]any)
	if !ok || len(obj) == 0 {
		return filterNode{}, Invalid(CodeInvalidFilter, field, "a nested filter is a JSON object with at least one condition")
	}
	return p.node(obj, field, depth+1)
}

func parseCondition(path string, cond any) (fieldCondition, error) {
	field := "filter." + path
	segs := strings.Split(path, ".")
	switch {
	case path == "":
		return fieldCondition{}, Invalid(CodeInvalidFilter, "filter", "empty path")
	case len(segs) > MaxFilterPathDepth:
		return fieldCondition{}, Invalid(CodeInvalidFilter, field, "path is deeper than %d segments", MaxFilterPathDepth)
	case slices.Contains(segs, ""):
		return fieldCondition{}, Invalid(CodeInvalidFilter, field, "path has an empty segment")
	}
	switch segs[0] {
	case "id", "type", "timestamp", "data":
	default:
		return fieldCondition{}, Invalid(CodeInvalidFilter, field, "path must start with id, type, timestamp or data (\"data.%s\"?), or be and, or, not", path)
	}
	if segs[0] != "data" && len(segs) > 1 {
		return fieldCondition{}, Invalid(CodeInvalidFilter, field, "%s is a string and has no fields", segs[0])
	}
	c := fieldCondition{path: path, segs: segs}
	if _, isList := cond.([]any); isList {
		return fieldCondition{}, Invalid(CodeInvalidFilter, field, "use {\"in\": [...]} for membership, or {\"eq\": [...]} to compare with an array")
	}
	opsObj, isObj := cond.(map[string]any)
	if !isObj {
		c.ops = []fieldOp{{name: OpEq, value: cond}}
		return c, nil
	}
	if len(opsObj) == 0 {
		return fieldCondition{}, Invalid(CodeInvalidFilter, field, "empty operator object; use {\"eq\": {}} to match an empty object")
	}
	for name, arg := range opsObj {
		op, err := parseOp(field, name, arg)
		if err != nil {
			return fieldCondition{}, err
		}
		c.ops = append(c.ops, op)
	}
	slices.SortFunc(c.ops, func(a, b fieldOp) int { return strings.Compare(a.name, b.name) })
	return c, nil
}

func parseOp(field, name string, arg any) (fieldOp, error) {
	op := fieldOp{name: name}
	switch name {
	case OpEq, OpNe:
		op.value = arg
	case OpIn, OpNin:
		list, ok := arg.([]any)
		if !ok {
			return op, Invalid(CodeInvalidFilter, field, "%q takes an array of values", name)
		}
		if len(list) == 0 {
			return op, Invalid(CodeInvalidFilter, field, "%q needs at least one value", name)
		}
		if len(list) > MaxFilterListValues {
			return op, Invalid(CodeInvalidFilter, field, "%q has %d values, over the limit of %d", name, len(list), MaxFilterListValues)
		}
		op.list = list
	case OpExists:
		b, ok := arg.(bool)
		if !ok {
			return op, Invalid(CodeInvalidFilter, field, "\"exists\" takes true or false")
		}
		op.exists = b
	case OpGt, OpGte, OpLt, OpLte:
		switch arg.(type) {
		case json.Number, string:
			op.value = arg
		default:
			return op, Invalid(CodeInvalidFilter, field, "%q takes a number or a string", name)
		}
	case OpPrefix:
		str, ok := arg.(string)
		if !ok {
			return op, Invalid(CodeInvalidFilter, field, "\"prefix\" takes a string")
		}
		op.prefix = str
	case OpRegex:
		str, ok := arg.(string)
		if !ok {
			return op, Invalid(CodeInvalidFilter, field, "\"regex\" takes a string")
		}
		if len(str) > MaxFilterRegexBytes {
			return op, Invalid(CodeInvalidFilter, field, "regex is %d bytes, over the limit of %d", len(str), MaxFilterRegexBytes)
		}
		re, err := regexp.Compile(str)
		if err != nil {
			return op, &ValidationError{Code: CodeInvalidFilter, Field: field, Message: "regex is not a valid RE2 expression: " + strings.TrimPrefix(err.Error(), "error parsing regexp: "), Err: err}
		}
		op.value, op.re = str, re
	default:
		return op, Invalid(CodeInvalidFilter, field, "unknown operator %q (known: eq, ne, in, nin, exists, gt, gte, lt, lte, prefix, regex)", name)
	}
	return op, nil
}

// MarshalJSON writes the filter in canonical form: every condition as an
// operator object, keys sorted. Parsing it gives an equivalent filter.
func (f *FieldFilter) MarshalJSON() ([]byte, error) {
	if f == nil {
		return []byte("null"), nil
	}
	return json.Marshal(f.root.canonical())
}

func (n *filterNode) canonical() map[string]any {
	out := make(map[string]any, len(n.conds)+3)
	for _, c := range n.conds {
		ops := make(map[string]any, len(c.ops))
		for _, op := range c.ops {
			switch op.name {
			case OpIn, OpNin:
				ops[op.name] = op.list
			case OpExists:
				ops[op.name] = op.exists
			case OpPrefix:
				ops[op.name] = op.prefix
			default:
				ops[op.name] = op.value
			}
		}
		out[c.path] = ops
	}
	for key, list := range map[string][]filterNode{CombAnd: n.and, CombOr: n.or} {
		if len(list) == 0 {
			continue
		}
		subs := make([]any, len(list))
		for i := range list {
			subs[i] = list[i].canonical()
		}
		out[key] = subs
	}
	if n.not != nil {
		out[CombNot] = n.not.canonical()
	}
	return out
}

// Match reports whether the filter holds for doc, the event as a decoded
// JSON object (see Target).
func (f *FieldFilter) Match(doc map[string]any) bool {
	if f == nil {
		return true
	}
	return f.root.holds(doc)
}

func (n *filterNode) holds(doc map[string]any) bool {
	for _, c := range n.conds {
		v, found := lookup(doc, c.segs)
		for _, op := range c.ops {
			if !op.holds(v, found) {
				return false
			}
		}
	}
	for i := range n.and {
		if !n.and[i].holds(doc) {
			return false
		}
	}
	if n.not != nil && n.not.holds(doc) {
		return false
	}
	if len(n.or) == 0 {
		return true
	}
	for i := range n.or {
		if n.or[i].holds(doc) {
			return true
		}
	}
	return false
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
	case OpGt, OpGte, OpLt, OpLte:
		if !found {
			return false
		}
		c, ok := jsonCompare(v, op.value)
		if !ok {
			return false
		}
		switch op.name {
		case OpGt:
			return c > 0
		case OpGte:
			return c >= 0
		case OpLt:
			return c < 0
		default:
			return c <= 0
		}
	case OpPrefix:
		str, ok := v.(string)
		return found && ok && strings.HasPrefix(str, op.prefix)
	case OpRegex:
		str, ok := v.(string)
		return found && ok && op.re.MatchString(str)
	}
	return false
}

// jsonCompare orders two numbers or two strings; ok is false for any
// other pair.
func jsonCompare(a, b any) (c int, ok bool) {
	switch x := a.(type) {
	case json.Number:
		y, isNum := b.(json.Number)
		if !isNum {
			return 0, false
		}
		return compareNumbers(x, y)
	case string:
		y, isStr := b.(string)
		if !isStr {
			return 0, false
		}
		return strings.Compare(x, y), true
	}
	return 0, false
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

// numbersEqual reports whether two JSON numbers are equal (see
// compareNumbers).
func numbersEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	c, ok := compareNumbers(a, b)
	return ok && c == 0
}

// compareNumbers orders JSON numbers: exactly when both are integers that
// fit in int64, else as float64 (a number beyond float64's range is an
// infinity). ok is false for a string that is not a number.
func compareNumbers(a, b json.Number) (int, bool) {
	ai, aErr := strconv.ParseInt(string(a), 10, 64)
	bi, bErr := strconv.ParseInt(string(b), 10, 64)
	if aErr == nil && bErr == nil {
		return cmp.Compare(ai, bi), true
	}
	af, aErr := strconv.ParseFloat(string(a), 64)
	bf, bErr := strconv.ParseFloat(string(b), 64)
	if (aErr != nil && !errors.Is(aErr, strconv.ErrRange)) || (bErr != nil && !errors.Is(bErr, strconv.ErrRange)) {
		return 0, false
	}
	return cmp.Compare(af, bf), true
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
