// Package gguf reads and writes GGUF model files (versions 2 and 3).
//
// A GGUF file is a header (magic, version, counts), a list of typed
// metadata pairs, a table describing each tensor (name, dimensions, ggml
// type, offset), and an aligned data section holding the tensor bytes.
//
// The reader treats every byte as hostile. Parse checks every count,
// length and offset with overflow-safe arithmetic before it allocates, so
// the memory it uses is bounded by the real size of the file and by
// Limits, never by a number the header claims. Every problem is reported
// as a *FormatError carrying the byte offset, wrapping one of the
// sentinel errors (ErrMagic, ErrVersion, ErrTruncated, ErrLimit,
// ErrLayout, ErrDuplicate, ErrType) so callers can decide with errors.Is.
//
// Tensor data is never copied at load: Open and OpenFile map the file
// read-only and TensorData returns windows of the mapping. Where memory
// mapping is unavailable the reader falls back to bounded reads.
//
// A split model (llama.cpp's gguf-split: shards "<prefix>-00001-of-00003.gguf"
// and so on, with split.no, split.count and split.tensors.count) is
// read shard by shard, each checked as a single file, and JoinSplit
// presents the shards as one File whose tensors come from all of them.
// Open and Load find the shards beside the first; OpenSplit and
// LoadSplit take them as open files (SplitPaths names them). OpenFile
// and LoadFile, given one shard of several, refuse it with a *SplitError
// naming the shard that is missing.
//
// Writer produces version 3 files with any metadata and tensors, with the
// alignment and padding llama.cpp expects, and refuses whatever a reader
// with DefaultLimits would refuse, so every file it writes reads back.
//
// README.md maps each requirement of the package's issue to the code and
// the test that proves it.
package gguf
