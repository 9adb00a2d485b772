package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

// runHealth asks a running server's /health endpoint whether it is ready.
// It exists for container health checks in images that have no shell or
// curl (the scratch image).
func runHealth(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8080/health", "the server's health URL")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	pos, status, done := parseCommand("health", fs, args, false, stdout, stderr)
	if done {
		return status
	}
	if len(pos) != 0 {
		return badUsage(stderr, "health", fmt.Sprintf("unexpected argument %q", pos[0]))
	}
	client := &http.Client{Timeout: *timeout}
	resp, err := client.Get(*url)
	if err != nil {
		fmt.Fprintf(stderr, "lisa health: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Fprintf(stdout, "%s %s\n", resp.Status, body)
	if resp.StatusCode != http.StatusOK {
		return 1
	}
	return 0
}
