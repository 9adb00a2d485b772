package grammar

import "fmt"

// Limits bounds the work and memory a client's grammar or schema may cause.
type Limits struct {
	MaxSource    int // bytes of GBNF text or JSON Schema
	MaxRules     int // rules, counting those made for groups and repetitions
	MaxElements  int // grammar elements over all rules
	MaxNesting   int // parentheses in GBNF, or schema nesting
	MaxRepeat    int // the bound of a {m,n} repetition (and schema minItems, maxLength...)
	MaxStacks    int // stacks a Matcher's state may hold
	MaxDepth     int // rule positions in one stack
	MaxMaskNodes int // stacks advanced while computing one token mask
}

// DefaultLimits returns limits generous for real schemas and small enough
// that a hostile one costs at most a few megabytes and milliseconds.
func DefaultLimits() Limits {
	return Limits{
		MaxSource:    256 << 10,
		MaxRules:     4096,
		MaxElements:  1 << 17,
		MaxNesting:   64,
		MaxRepeat:    1000,
		MaxStacks:    1024,
		MaxDepth:     512,
		MaxMaskNodes: 1 << 20,
	}
}

// LimitError reports a grammar, schema or matcher state beyond a limit.
type LimitError struct {
	What  string // the Limits field
	Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("grammar: %s exceeds the limit of %d", e.What, e.Limit)
}

// SyntaxError reports malformed GBNF text at a byte offset.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("grammar: at byte %d: %s", e.Offset, e.Msg)
}
