package worker

import (
	"context"
	"os"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// Info describes the loaded model for the ready message.
type Info struct {
	Name          string   // general.name
	Architecture  string   // general.architecture
	ContextSize   int      // tokens per slot, > 0
	Slots         int      // generation slots (the most choices a request may have); 0: not reported
	VocabSize     int      // tokens in the vocabulary, > 0
	SpecialTokens []string // texts of control tokens
	ControlIDs    []int32  // ids plain text never tokenizes to, increasing
	BOS           int32    // the BOS id, -1 when the model has none
	Kernels       string   // kernel path in use
	KVCacheBytes  int64    // memory of the KV cache (0: not reported)
	CacheTypeK    string   // key cache element type ("f16", "f32", "q8_0"; empty: not reported)
	CacheTypeV    string   // value cache element type
}

// Engine is the loaded model as the worker loop uses it. Its methods may be
// called from several goroutines at once.
type Engine interface {
	// Info describes the model.
	Info() Info
	// Tokenize turns text into token ids; with special set, special-token
	// texts become their ids.
	Tokenize(text string, special bool) ([]int32, error)
	// Detokenize turns token ids into text.
	Detokenize(ids []int32) (string, error)
	// Generate runs one generation, calling emit for each chunk of text
	// (at most req.MaxTokens times per choice; each chunk names its
	// choice, 0 .. req.Choices()-1, and a request for several choices
	// ends with each one's finish reason in End.Choices, none for one
	// choice). It renders and tokenizes the prompt
	// once; a request the model cannot serve fails with a *gen.Error
	// before any chunk. It returns early, with ctx's error, once ctx is
	// done — checked at least once per decode step — and returns emit's
	// error when emit fails.
	Generate(ctx context.Context, req gen.Request, emit func(gen.Chunk) error) (gen.End, error)
}

// LoadProgress is how far an EngineLoader has got validating the model's
// tensors.
type LoadProgress struct {
	Tensors      int   // tensors validated so far
	TensorsTotal int   // tensors in the model file
	Bytes        int64 // data bytes of the tensors validated
	BytesTotal   int64 // data bytes of all the tensors
}

// EngineLoader loads the engine from the model's files with the broker's
// settings: one file, or the shards of a split model, the first shard
// first (gguf.OpenSplit and gguf.LoadSplit take either). The files are
// untrusted: a loader validates every byte it uses.
// A loader may call progress (never nil) as it goes, as often as it likes
// to be shown, with counts that never decrease; the worker forwards each
// report to the broker and puts the last one in ready.
type EngineLoader func(model []*os.File, hello ipc.Hello, progress func(LoadProgress)) (Engine, error)
