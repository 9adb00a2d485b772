package main

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestHashKey(t *testing.T) {
	good := "Zq8vR2mN5xL0pW7tK3hJ9cB4fD6gS1aE"
	sum := sha256.Sum256([]byte(good))
	tests := []struct {
		name, in string
		code     int
		out      string
	}{
		{"good", good + "\n", 0, "sha256:" + hex.EncodeToString(sum[:]) + "\n"},
		{"good crlf", good + "\r\n", 0, "sha256:" + hex.EncodeToString(sum[:]) + "\n"},
		{"good no newline", good, 0, "sha256:" + hex.EncodeToString(sum[:]) + "\n"},
		{"short", "sk-abc123\n", 1, ""},
		{"placeholder", strings.Repeat("changeme", 5) + "\n", 1, ""},
		{"empty", "", 1, ""},
		{"huge", strings.Repeat("x", 10000), 1, ""},
	}
	for _, tt := range tests {
		var out, errb strings.Builder
		code := hashKey(nil, strings.NewReader(tt.in), &out, &errb)
		if code != tt.code || out.String() != tt.out {
			t.Errorf("%s: code %d out %q (stderr %q), want %d %q", tt.name, code, out.String(), errb.String(), tt.code, tt.out)
		}
		if code != 0 && errb.Len() == 0 {
			t.Errorf("%s: refused without a message", tt.name)
		}
	}
}
