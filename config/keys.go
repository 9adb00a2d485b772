package config

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MinKeyLength is the fewest characters an API key may have.
const MinKeyLength = 32

// DigestPrefix starts every configured API key digest.
const DigestPrefix = "sha256:"

// maxKeysFile bounds the size of an API keys file.
const maxKeysFile = 1 << 20

// Digest is the SHA-256 digest of one API key.
type Digest [sha256.Size]byte

// String returns d in the configuration's form, "sha256:<hex>".
func (d Digest) String() string { return DigestPrefix + hex.EncodeToString(d[:]) }

// ErrWeakKey is returned by HashKey for a key that is too short, too
// uniform or a known placeholder.
var ErrWeakKey = errors.New("weak API key")

// placeholders are keys people leave in configurations. HashKey refuses
// them (and anything containing the longer ones), and Validate refuses the
// digests of the exact ones.
var placeholders = []string{
	"sk-xxx", "sk-xxxx", "sk-...", "sk-1234", "sk-test", "sk-none", "sk-no-key-required",
	"changeme", "change-me", "change_me", "test", "testing", "test-key", "testkey",
	"password", "secret", "apikey", "api-key", "api_key", "key", "token",
	"your-api-key", "your_api_key", "yourapikey", "your-key-here", "example",
	"dummy", "placeholder", "xxx", "xxxx", "default", "admin", "letmein",
	"none", "null", "1234", "12345678", "0000",
}

// placeholderWords are refused anywhere inside a key given to HashKey.
var placeholderWords = []string{
	"changeme", "change-me", "change_me", "your-api-key", "your_api_key",
	"yourapikey", "your-key-here", "placeholder", "example", "no-key-required",
}

// minDistinct is the fewest distinct characters a key must have.
const minDistinct = 8

// HashKey checks that key is strong enough and returns its digest. It
// refuses keys shorter than MinKeyLength, keys with characters outside
// printable ASCII or with spaces (they could not travel in an HTTP header
// unchanged), keys with fewer than 8 distinct characters, and placeholders.
func HashKey(key string) (Digest, error) {
	if err := checkKey(key); err != nil {
		return Digest{}, err
	}
	return sha256.Sum256([]byte(key)), nil
}

func checkKey(key string) error {
	if len(key) < MinKeyLength {
		return fmt.Errorf("%w: %d characters, at least %d are needed", ErrWeakKey, len(key), MinKeyLength)
	}
	distinct := make(map[byte]bool)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%w: byte %d is not a printable ASCII character other than space", ErrWeakKey, i)
		}
		distinct[c] = true
	}
	if len(distinct) < minDistinct {
		return fmt.Errorf("%w: only %d distinct characters, at least %d are needed", ErrWeakKey, len(distinct), minDistinct)
	}
	low := strings.ToLower(key)
	for _, w := range placeholderWords {
		if strings.Contains(low, w) {
			return fmt.Errorf("%w: it contains the placeholder %q", ErrWeakKey, w)
		}
	}
	for _, p := range placeholders {
		if isRepetition(low, p) {
			return fmt.Errorf("%w: it is the placeholder %q repeated", ErrWeakKey, p)
		}
	}
	return nil
}

// isRepetition reports whether s is unit repeated, possibly cut short.
func isRepetition(s, unit string) bool {
	if unit == "" {
		return false
	}
	for i := 0; i < len(s); i += len(unit) {
		end := min(i+len(unit), len(s))
		if s[i:end] != unit[:end-i] {
			return false
		}
	}
	return true
}

// ParseDigest parses "sha256:<64 hex digits>" (hex in either case).
func ParseDigest(s string) (Digest, error) {
	var d Digest
	hexPart, ok := strings.CutPrefix(s, DigestPrefix)
	if !ok {
		return d, fmt.Errorf("not a key digest: it must start with %q (make one with lisa hash-key; plain keys are never configured)", DigestPrefix)
	}
	if len(hexPart) != 2*len(d) {
		return d, fmt.Errorf("key digest has %d hex digits, want %d", len(hexPart), 2*len(d))
	}
	if _, err := hex.Decode(d[:], []byte(hexPart)); err != nil {
		return d, fmt.Errorf("key digest: %w", err)
	}
	return d, nil
}

// isPlaceholderDigest reports whether d is the digest of a known placeholder.
func isPlaceholderDigest(d Digest) (string, bool) {
	for _, p := range placeholders {
		for _, v := range []string{p, strings.ToUpper(p)} {
			if sha256.Sum256([]byte(v)) == d {
				return v, true
			}
		}
	}
	return "", false
}

// ReadKeysFile reads one digest per line from the file at path. Blank
// lines and lines starting with '#' are skipped. Errors name the line.
func ReadKeysFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("api keys file: %w", err)
	}
	defer f.Close()
	return readKeys(io.LimitReader(f, maxKeysFile+1), path)
}

func readKeys(r io.Reader, name string) ([]string, error) {
	var keys []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 4096)
	total := 0
	for line := 1; sc.Scan(); line++ {
		total += len(sc.Bytes()) + 1
		if total > maxKeysFile {
			return nil, fmt.Errorf("%s: larger than %d bytes", name, maxKeysFile)
		}
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if _, err := ParseDigest(s); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		keys = append(keys, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return keys, nil
}
