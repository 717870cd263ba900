package question

import (
	"fmt"
	"strconv"
	"strings"
)

// Bounds on an answer schema, checked when it is compiled. An agent's
// schema is untrusted input on the caller's side (the terminal, policies
// and resolvers validate it) and on a relay's server (a sub-agent's schema
// checks the relay's caller's answers), and JSON Schema lets a small
// document demand exponential work: a chain of anyOf whose branches each
// $ref the next doubles the work per level (1.8 KB took 2.8 s at 18
// levels). Issue 23, finding 4.
const (
	// MaxSchemaBytes bounds an answer schema's size.
	MaxSchemaBytes = 64 << 10
	// MaxSubschemas bounds how many subschemas (objects and booleans in
	// schema positions) an answer schema holds.
	MaxSubschemas = 1000
	// MaxSchemaRefs bounds its $ref and $dynamicRef keywords.
	MaxSchemaRefs = 100
	// MaxSchemaCost bounds the validation budget: the number of subschema
	// evaluations one instance value can cost, each $ref counting its
	// target's whole cost (a recursive $ref counts once per level of the
	// answer, which its size bounds). Validation of an answer then takes at
	// most about MaxSchemaCost steps for each of its values.
	MaxSchemaCost = 10000
)

// schemaKeys are the keywords whose value is a schema, a list or a map of
// schemas (draft 2020-12); $defs is left out: what it holds costs only
// when a $ref reaches it.
var (
	oneSchema  = []string{"additionalProperties", "items", "contains", "propertyNames", "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "additionalItems"}
	listSchema = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	mapSchema  = []string{"properties", "patternProperties", "dependentSchemas"}
)

// checkBounds refuses a schema past MaxSchemaBytes, MaxSubschemas,
// MaxSchemaRefs or MaxSchemaCost, naming which.
func checkBounds(raw []byte, doc any) error {
	if len(raw) > MaxSchemaBytes {
		return fmt.Errorf("answerSchema is %d bytes, more than the %d allowed", len(raw), MaxSchemaBytes)
	}
	b := &bounder{root: doc, anchors: map[string]any{}, memo: map[string]int{}}
	b.walk(doc, true)
	if b.subschemas > MaxSubschemas {
		return fmt.Errorf("answerSchema has %d subschemas, more than the %d allowed", b.subschemas, MaxSubschemas)
	}
	if b.refs > MaxSchemaRefs {
		return fmt.Errorf("answerSchema has %d $ref keywords, more than the %d allowed", b.refs, MaxSchemaRefs)
	}
	if cost := b.cost(doc); cost > MaxSchemaCost {
		return fmt.Errorf("answerSchema would cost more than %d evaluations per value to check (its $ref and anyOf/oneOf/allOf keywords multiply), more than the %d allowed", min(cost, 10*MaxSchemaCost), MaxSchemaCost)
	}
	return nil
}

type bounder struct {
	root       any
	anchors    map[string]any
	memo       map[string]int // cost by schema identity
	path       []string       // the schemas being costed
	subschemas int
	refs       int
}

// children calls f with each schema directly under s (with $defs when
// withDefs).
func children(s map[string]any, withDefs bool, f func(any)) {
	for _, k := range oneSchema {
		if v, ok := s[k]; ok {
			f(v)
		}
	}
	for _, k := range listSchema {
		if arr, ok := s[k].([]any); ok {
			for _, v := range arr {
				f(v)
			}
		}
	}
	keys := mapSchema
	if withDefs {
		keys = append(append([]string(nil), mapSchema...), "$defs", "definitions")
	}
	for _, k := range keys {
		if m, ok := s[k].(map[string]any); ok {
			for _, v := range m {
				f(v)
			}
		}
	}
}

func (b *bounder) walk(v any, schema bool) {
	if !schema {
		return
	}
	switch s := v.(type) {
	case bool:
		b.subschemas++
	case map[string]any:
		b.subschemas++
		if _, ok := s["$ref"]; ok {
			b.refs++
		}
		if _, ok := s["$dynamicRef"]; ok {
			b.refs++
		}
		for _, k := range []string{"$anchor", "$dynamicAnchor"} {
			if a, ok := s[k].(string); ok {
				b.anchors[a] = s
			}
		}
		children(s, true, func(c any) { b.walk(c, true) })
	}
}

// resolve finds a $ref's target in the document: a JSON pointer (#/...)
// or an anchor (#name); nil for any other form.
func (b *bounder) resolve(ref string) any {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	if frag == "" {
		return b.root
	}
	if !strings.HasPrefix(frag, "/") {
		return b.anchors[frag]
	}
	cur := b.root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// cost is how many subschema evaluations v may take for one value; a
// recursive $ref (to a schema being costed) counts once.
func (b *bounder) cost(v any) int {
	s, ok := v.(map[string]any)
	if !ok {
		return 1
	}
	id := fmt.Sprintf("%p", s)
	if c, ok := b.memo[id]; ok {
		return c
	}
	if b.onPath(id) {
		return 1
	}
	b.push(id)
	total := 1
	add := func(c int) { total = min(total+c, 10*MaxSchemaCost+1) }
	for _, k := range []string{"$ref", "$dynamicRef"} {
		if ref, ok := s[k].(string); ok {
			target := b.resolve(ref)
			if target == nil {
				// A form this count does not follow: assume the worst a
				// single reference can reach, the whole document.
				add(b.subschemas)
			} else {
				add(b.cost(target))
			}
		}
	}
	children(s, false, func(c any) { add(b.cost(c)) })
	b.pop()
	b.memo[id] = total
	return total
}

// The costing path: schemas being costed, by identity.
func (b *bounder) onPath(id string) bool {
	for _, p := range b.path {
		if p == id {
			return true
		}
	}
	return false
}
func (b *bounder) push(id string) { b.path = append(b.path, id) }
func (b *bounder) pop()           { b.path = b.path[:len(b.path)-1] }
