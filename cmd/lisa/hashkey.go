package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lisa-llm/lisa/config"
)

// maxKeyLine bounds the line hash-key reads.
const maxKeyLine = 4096

// runHashKey reads one API key from stdin and prints the digest line to
// put in api_keys or an api keys file. It refuses keys shorter than
// config.MinKeyLength characters and known placeholders: the server only
// ever sees digests, so this is the one place those rules can be checked.
func runHashKey(args []string, stdout, stderr io.Writer) int {
	return hashKey(args, os.Stdin, stdout, stderr)
}

func hashKey(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hash-key", flag.ContinueOnError)
	pos, status, done := parseCommand("hash-key", fs, args, false, stdout, stderr)
	if done {
		return status
	}
	if len(pos) != 0 {
		return badUsage(stderr, "hash-key", fmt.Sprintf("unexpected argument %q (the key is read from stdin, never from the command line)", pos[0]))
	}
	r := bufio.NewReaderSize(io.LimitReader(stdin, maxKeyLine+1), maxKeyLine+1)
	line, err := r.ReadString('\n')
	if err != nil && err != io.EOF {
		fmt.Fprintf(stderr, "lisa hash-key: reading stdin: %v\n", err)
		return 1
	}
	if len(line) > maxKeyLine {
		fmt.Fprintf(stderr, "lisa hash-key: the key line is longer than %d bytes\n", maxKeyLine)
		return 1
	}
	key := strings.TrimRight(line, "\r\n")
	if key == "" {
		fmt.Fprintln(stderr, "lisa hash-key: no key on stdin")
		return 1
	}
	d, err := config.HashKey(key)
	if err != nil {
		fmt.Fprintf(stderr, "lisa hash-key: refusing this key: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, d.String())
	return 0
}
