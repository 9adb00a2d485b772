package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lisa-llm/lisa/model/synth"
)

// shapeNames lists the shapes `lisa gguf synth --shape` accepts.
func shapeNames() string {
	var names []string
	for _, s := range synth.Shapes() {
		names = append(names, s.Name)
	}
	return strings.Join(names, "|")
}

// listShapes prints one line per shape: its name, architecture, widths
// and tokenizer.
func listShapes(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SHAPE\tARCH\tLAYERS\tEMBD\tHEADS\tKV\tHEAD_DIM\tFF\tVOCAB\tTOKENIZER")
	for _, s := range synth.Shapes() {
		tok := "--vocab FILE"
		if s.Vocab.Family != 0 {
			tok = "synthetic " + s.Vocab.Family.String()
		}
		hd := s.HeadDim
		if hd == 0 {
			hd = s.NEmbd / s.NHead
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n",
			s.Name, s.Arch, s.NLayer, s.NEmbd, s.NHead, s.NHeadKV, hd, s.NFF, s.NVocab, tok)
	}
	tw.Flush()
}

// ggufSynth runs `lisa gguf synth`: it writes a random-weight model of a
// real shape, with the family's synthetic tokenizer or one copied from
// --vocab.
func ggufSynth(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("synth")
	shape := fs.String("shape", "", "model shape (list: print the shapes): "+shapeNames())
	typ := fs.String("type", "q4_k_m", "file type, llama-quantize's mixes (mxfp4: every matrix MXFP4, which llama-quantize cannot write): "+strings.Join(synth.FileTypeNames(), "|"))
	seed := fs.Uint64("seed", 1, "random seed")
	vocab := fs.String("vocab", "", "GGUF `file` whose tokenizer is copied instead of the synthetic one (required for mini, small-110m, tinyllama-1.1b: e.g. ggml-vocab-llama-spm.gguf)")
	pool := fs.Int("pool", 0, "benchmark files written fast: the quantized matrices take their rows from a pool of this many random `rows` per row type, quantized once (e.g. 4096; 0: every row drawn and quantized, as the reference files)")
	out := fs.String("o", "", "output `file`")
	noSandbox := fs.Bool("no-sandbox", false, "parse the --vocab file in this process instead of a sandboxed worker")
	pos, status, done := parseCommand("gguf synth", fs, args, true, stdout, stderr)
	if done {
		if status == 0 {
			fmt.Fprintln(stdout, "\nshapes:")
			listShapes(stdout)
		}
		return status
	}
	if len(pos) == 0 && *shape == "list" {
		listShapes(stdout)
		return 0
	}
	switch {
	case len(pos) != 0:
		return badUsage(stderr, "gguf synth", fmt.Sprintf("unexpected argument %q", pos[0]))
	case *shape == "":
		return badUsage(stderr, "gguf synth", "--shape is required (--shape list prints them)")
	case *out == "":
		return badUsage(stderr, "gguf synth", "-o OUT is required")
	}
	s, ok := synth.Lookup(*shape)
	if !ok {
		fmt.Fprintf(stderr, "lisa gguf synth: unknown shape %q (want %s)\n", *shape, shapeNames())
		return 2
	}
	ft, err := synth.ParseFileType(*typ)
	if err != nil {
		fmt.Fprintf(stderr, "lisa gguf synth: %v\n", err)
		return 2
	}
	o := synth.Options{Shape: s, Type: ft, Seed: *seed, PoolRows: *pool}
	if *vocab != "" {
		kvs, err := loadVocabKVs("lisa gguf synth", *vocab, *noSandbox, stderr)
		if err != nil {
			return fail(stderr, "synth", err)
		}
		o.VocabKVs = kvs
	}
	n, err := synth.WriteFile(*out, o)
	if err != nil {
		return fail(stderr, "synth", err)
	}
	fmt.Fprintf(stdout, "wrote %s: %s %s, seed %d, %s\n", *out, s.Name, ft, *seed, humanBytes(n))
	return 0
}
