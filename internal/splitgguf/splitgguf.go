// Package splitgguf writes a GGUF model split into shards as llama.cpp's
// gguf-split writes them, for tests of loading split models.
package splitgguf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lisa-llm/lisa/gguf"
)

// Write splits the model at src into count shards named as gguf-split
// names them, dir/prefix-00001-of-0000N.gguf and so on, and returns their
// paths in order. Every shard holds split.no (uint16), split.count
// (uint16) and split.tensors.count (int32); the first also holds all of
// src's metadata; the tensors, in src's order, are spread evenly over the
// shards.
func Write(src, dir, prefix string, count int) ([]string, error) {
	if count < 2 || count > 99999 {
		return nil, fmt.Errorf("splitgguf: %d shards", count)
	}
	f, err := gguf.Open(src, gguf.DefaultLimits())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if len(f.Tensors) < count {
		return nil, fmt.Errorf("splitgguf: %d tensors for %d shards", len(f.Tensors), count)
	}
	per := (len(f.Tensors) + count - 1) / count
	var paths []string
	for i := range count {
		w := gguf.NewWriter()
		w.SetAlignment(f.Alignment)
		keys := []gguf.KV{
			{Key: gguf.KeySplitNo, Value: gguf.Uint16Value(uint16(i))},
			{Key: gguf.KeySplitCount, Value: gguf.Uint16Value(uint16(count))},
			{Key: gguf.KeySplitTensors, Value: gguf.Int32Value(int32(len(f.Tensors)))},
		}
		if i == 0 {
			for _, kv := range f.KV {
				if kv.Key != gguf.KeyAlignment {
					keys = append(keys, kv)
				}
			}
		}
		for _, kv := range keys {
			if err := w.Add(kv.Key, kv.Value); err != nil {
				return nil, err
			}
		}
		for j := i * per; j < min((i+1)*per, len(f.Tensors)); j++ {
			t := &f.Tensors[j]
			data, err := f.TensorData(t)
			if err != nil {
				return nil, err
			}
			if err := w.AddTensor(t.Name, t.Type, t.Dims, data); err != nil {
				return nil, err
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, i+1, count))
		out, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		_, err = w.WriteTo(out)
		if err = errors.Join(err, out.Close()); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}
