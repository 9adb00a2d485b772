package gguf

// Limits bounds what the reader accepts. Whatever the limits, memory used
// while parsing is also bounded by the real size of the file: a count is
// checked against the bytes that remain before anything is allocated.
// A zero or negative field means "use the default".
type Limits struct {
	// MaxKV is the largest number of metadata key/value pairs.
	MaxKV int
	// MaxTensors is the largest number of tensors in the tensor table.
	MaxTensors int
	// MaxStringLen is the longest string, in bytes, for metadata values
	// (a chat template, one token), keys and tensor names.
	MaxStringLen int
	// MaxKeyLen is the longest metadata key or tensor name, in bytes.
	MaxKeyLen int
	// MaxArrayLen is the largest number of elements in one array.
	MaxArrayLen int
	// MaxDepth is the deepest nesting of arrays: 1 allows arrays of
	// scalars, 2 allows arrays of arrays of scalars, and so on.
	MaxDepth int
	// MaxElements is the largest total number of array elements across
	// all metadata, nested arrays included.
	MaxElements int64
	// MaxNestedArrays is the largest total number of arrays held inside
	// other arrays, across all metadata. Each costs several times the 12
	// bytes it takes in the file, and no real model has any (llama.cpp
	// refuses them), so the default is far below MaxElements.
	MaxNestedArrays int
}

// Default values of Limits.
const (
	DefaultMaxKV        = 1 << 12
	DefaultMaxTensors   = 1 << 18
	DefaultMaxStringLen = 1 << 24
	DefaultMaxKeyLen    = 1 << 10
	DefaultMaxArrayLen  = 1 << 24
	DefaultMaxDepth     = 4
	DefaultMaxElements  = 1 << 26

	DefaultMaxNestedArrays = 1 << 16
)

// DefaultLimits returns limits that admit every real model seen so far
// (vocabularies of hundreds of thousands of tokens and merges, chat
// templates of many kilobytes, thousands of tensors) while refusing
// absurd counts.
func DefaultLimits() Limits {
	return Limits{
		MaxKV:        DefaultMaxKV,
		MaxTensors:   DefaultMaxTensors,
		MaxStringLen: DefaultMaxStringLen,
		MaxKeyLen:    DefaultMaxKeyLen,
		MaxArrayLen:  DefaultMaxArrayLen,
		MaxDepth:     DefaultMaxDepth,
		MaxElements:  DefaultMaxElements,

		MaxNestedArrays: DefaultMaxNestedArrays,
	}
}

// withDefaults returns l with every unset field replaced by its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxKV <= 0 {
		l.MaxKV = d.MaxKV
	}
	if l.MaxTensors <= 0 {
		l.MaxTensors = d.MaxTensors
	}
	if l.MaxStringLen <= 0 {
		l.MaxStringLen = d.MaxStringLen
	}
	if l.MaxKeyLen <= 0 {
		l.MaxKeyLen = d.MaxKeyLen
	}
	if l.MaxArrayLen <= 0 {
		l.MaxArrayLen = d.MaxArrayLen
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxElements <= 0 {
		l.MaxElements = d.MaxElements
	}
	if l.MaxNestedArrays <= 0 {
		l.MaxNestedArrays = d.MaxNestedArrays
	}
	return l
}
