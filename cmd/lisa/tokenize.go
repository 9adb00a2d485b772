package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/lisa-llm/lisa/tokenizer"
)

// maxTokenizeFile bounds the file `lisa tokenize -f` reads.
const maxTokenizeFile = 64 << 20

// tokenizeOptions are the flags of lisa tokenize.
type tokenizeOptions struct {
	model     string
	noBOS     bool
	special   bool
	json      bool
	file      string
	text      []string
	noSandbox bool
}

// tokenizeParams are the parameters of the tokenize job.
type tokenizeParams struct {
	Model   string `json:"model"` // the path, for error messages
	Text    []byte `json:"text"`  // bytes, not a JSON string: any bytes go through
	NoBOS   bool   `json:"no_bos"`
	Special bool   `json:"special"`
	JSON    bool   `json:"json"`
}

// maxTokenizeReply bounds tokenize's output: a line per token of the
// largest input, each with its piece escaped.
const maxTokenizeReply = 4 << 30

// runTokenize prints the tokens of a text with a model's tokenizer. It
// needs only the tokenizer metadata, so vocabulary-only GGUF files work.
func runTokenize(args []string, stdout, stderr io.Writer) int {
	opt, code := parseTokenizeFlags(args, stdout, stderr)
	if code >= 0 {
		return code
	}
	text, err := tokenizeInput(opt)
	if err != nil {
		fmt.Fprintf(stderr, "lisa tokenize: %v\n", err)
		return 1
	}
	err = runJob(jobCall{cmd: "lisa tokenize", job: "tokenize", model: opt.model, noSandbox: opt.noSandbox,
		params: tokenizeParams{Model: opt.model, Text: []byte(text), NoBOS: opt.noBOS, Special: opt.special, JSON: opt.json},
		limit:  func(int64) int64 { return maxTokenizeReply }}, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "lisa tokenize: %v\n", err)
		return 1
	}
	return 0
}

// tokenizeJob parses the model's tokenizer and writes the tokens of the
// text.
func tokenizeJob(env *jobEnv) error {
	var p tokenizeParams
	f, err := env.parse(&p)
	if err != nil {
		return err
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Model, err)
	}
	if err := env.serving(); err != nil {
		return err
	}
	ids := tok.Encode(string(p.Text), !p.NoBOS, p.Special)
	w := bufio.NewWriterSize(env.out, 64<<10)
	if p.JSON {
		if ids == nil {
			ids = []int32{}
		}
		b, _ := json.Marshal(ids)
		fmt.Fprintf(w, "%s\n", b)
		return w.Flush()
	}
	for _, id := range ids {
		fmt.Fprintf(w, "%6d -> '%s'\n", id, printable(tok.PieceSpecial(id)))
	}
	return w.Flush()
}

// parseTokenizeFlags parses args, allowing flags after the text. It
// returns the exit code to stop with, or -1 to go on.
func parseTokenizeFlags(args []string, stdout, stderr io.Writer) (tokenizeOptions, int) {
	var opt tokenizeOptions
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.StringVar(&opt.model, "m", "", "GGUF `file` whose tokenizer to use (a model or a vocabulary-only file)")
	fs.BoolVar(&opt.noBOS, "no-bos", false, "do not add the BOS/EOS tokens the model asks for")
	fs.BoolVar(&opt.special, "special", false, "turn the texts of control tokens into those tokens")
	fs.BoolVar(&opt.json, "json", false, "print one JSON array of ids on one line")
	fs.StringVar(&opt.file, "f", "", "read the text from `file`, exactly as its bytes")
	fs.BoolVar(&opt.noSandbox, "no-sandbox", false, "parse the model in this process instead of a sandboxed worker (a hostile model file gets your user's rights)")
	pos, status, done := parseCommand("tokenize", fs, args, true, stdout, stderr)
	if done {
		return opt, status
	}
	opt.text = pos
	switch {
	case opt.model == "":
		return opt, badUsage(stderr, "tokenize", "-m MODEL is required")
	case len(opt.text) > 1:
		return opt, badUsage(stderr, "tokenize", "give one TEXT (quote it)")
	case (opt.file == "") == (len(opt.text) == 0):
		return opt, badUsage(stderr, "tokenize", "give exactly one of -f FILE and TEXT")
	}
	return opt, -1
}

// tokenizeInput returns the text to tokenize: the argument or the bytes
// of the -f file.
func tokenizeInput(opt tokenizeOptions) (string, error) {
	if opt.file == "" {
		return opt.text[0], nil
	}
	fh, err := os.Open(opt.file)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxTokenizeFile+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", opt.file, err)
	}
	if len(b) > maxTokenizeFile {
		return "", fmt.Errorf("%s is larger than %d bytes", opt.file, maxTokenizeFile)
	}
	return string(b), nil
}

// printable shows a piece as text, escaping bytes that are not valid
// UTF-8 and control characters other than space.
func printable(p []byte) string {
	out := make([]byte, 0, len(p))
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		switch {
		case r == utf8.RuneError && n == 1:
			out = fmt.Appendf(out, `\x%02x`, p[0])
		case r < 0x20 || r == 0x7f:
			q := strconv.QuoteRune(r)
			out = append(out, q[1:len(q)-1]...)
		default:
			out = append(out, p[:n]...)
		}
		p = p[n:]
	}
	return string(out)
}
