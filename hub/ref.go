package hub

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Limits on names. The hub's own are tighter; these only bound what a
// hostile listing can make us handle.
const (
	maxRepoPart = 96   // the hub's limit on an owner or a repository name
	maxPathLen  = 1024 // bytes of a file path in a repository
	maxSegment  = 255  // bytes of one path segment (a file system's NAME_MAX)
	maxShards   = 9999 // shards of one split model
)

// ErrName is wrapped by every error about a repository, file or tag name
// that is malformed or unsafe.
var ErrName = errors.New("bad name")

// Ref is what the user asked for: REPO, REPO:QUANT or REPO/FILE.
type Ref struct {
	Repo  string // "owner/name"
	Quant string // a quantisation tag such as "Q4_K_M"; "" when not given
	File  string // a file path in the repository; "" when not given
}

// String returns r as the user would write it.
func (r Ref) String() string {
	switch {
	case r.File != "":
		return r.Repo + "/" + r.File
	case r.Quant != "":
		return r.Repo + ":" + r.Quant
	}
	return r.Repo
}

// ParseRef parses REPO[:QUANT|/FILE], REPO being OWNER/NAME. A FILE must
// be a safe relative path ending in ".gguf".
func ParseRef(s string) (Ref, error) {
	parts := strings.SplitN(s, "/", 3)
	if len(parts) < 2 {
		return Ref{}, fmt.Errorf("%w: %q: want OWNER/NAME[:QUANT] or OWNER/NAME/FILE.gguf", ErrName, s)
	}
	var r Ref
	name := parts[1]
	if len(parts) == 3 {
		r.File = parts[2]
		if err := CheckPath(r.File); err != nil {
			return Ref{}, err
		}
		if !IsGGUF(r.File) {
			return Ref{}, fmt.Errorf("%w: %q: only .gguf files can be pulled", ErrName, r.File)
		}
	} else if n, q, ok := strings.Cut(name, ":"); ok {
		name, r.Quant = n, q
		if err := checkQuant(q); err != nil {
			return Ref{}, err
		}
	}
	r.Repo = parts[0] + "/" + name
	if err := CheckRepo(r.Repo); err != nil {
		return Ref{}, err
	}
	return r, nil
}

// CheckRepo reports whether repo is OWNER/NAME with both parts following
// the hub's rules: letters, digits, '-', '_' and '.', starting with a
// letter or digit, no "--" or "..", at most 96 bytes each.
func CheckRepo(repo string) error {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok {
		return fmt.Errorf("%w: repository %q: want OWNER/NAME", ErrName, repo)
	}
	for _, p := range []string{owner, name} {
		if err := checkRepoPart(p); err != nil {
			return fmt.Errorf("%w: repository %q: %s", ErrName, repo, err)
		}
	}
	return nil
}

func checkRepoPart(p string) error {
	if p == "" || len(p) > maxRepoPart {
		return fmt.Errorf("a part must have 1 to %d characters", maxRepoPart)
	}
	if !isAlnum(p[0]) || !isAlnum(p[len(p)-1]) {
		return errors.New("a part must start and end with a letter or digit")
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return fmt.Errorf("character %q not allowed", c)
		}
	}
	if strings.Contains(p, "--") || strings.Contains(p, "..") {
		return errors.New(`"--" and ".." are not allowed`)
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// CheckPath reports whether p is safe to use as a path below a directory:
// relative, clean, slash-separated, no "." or ".." segment, no empty
// segment, no backslash, NUL or other control character, and bounded in
// length. It is applied to every name that comes from a listing.
func CheckPath(p string) error {
	bad := func(why string) error { return fmt.Errorf("%w: file %q: %s", ErrName, trunc(p), why) }
	switch {
	case p == "" || len(p) > maxPathLen:
		return bad(fmt.Sprintf("must have 1 to %d bytes", maxPathLen))
	case strings.HasPrefix(p, "/"):
		return bad("absolute path")
	case strings.ContainsAny(p, `\:`):
		return bad(`backslash or colon`)
	case strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f || r == 0xfffd }):
		return bad("control character or invalid UTF-8")
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return bad("empty, '.' or '..' segment")
		case len(seg) > maxSegment:
			return bad(fmt.Sprintf("a segment is longer than %d bytes", maxSegment))
		}
	}
	if path.Clean(p) != p {
		return bad("not a clean path")
	}
	return nil
}

// IsGGUF reports whether p names a GGUF file.
func IsGGUF(p string) bool { return strings.HasSuffix(strings.ToLower(p), ".gguf") }

func checkQuant(q string) error {
	if q == "" || len(q) > 32 {
		return fmt.Errorf("%w: quantisation tag %q: want 1 to 32 characters such as Q4_K_M", ErrName, q)
	}
	for i := 0; i < len(q); i++ {
		if c := q[i]; !isAlnum(c) && c != '_' && c != '-' && c != '.' {
			return fmt.Errorf("%w: quantisation tag %q: character %q not allowed", ErrName, q, c)
		}
	}
	return nil
}

// MatchQuant reports whether the file path p holds the tag q as a whole
// word, ignoring case: the characters around it must be the start or end
// of the path or one of "/-. ", so that "Q4_K" matches neither
// "Q4_K_M" nor "IQ4_K". The ".gguf" extension is not part of the match.
func MatchQuant(p, q string) bool {
	if q == "" {
		return false
	}
	s := strings.ToLower(p)
	s = strings.TrimSuffix(s, ".gguf")
	q = strings.ToLower(q)
	for i := 0; ; {
		j := strings.Index(s[i:], q)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(q)
		if (start == 0 || isQuantSep(s[start-1])) && (end == len(s) || isQuantSep(s[end])) {
			return true
		}
		i = start + 1
	}
}

func isQuantSep(c byte) bool { return c == '/' || c == '-' || c == '.' || c == ' ' }

// knownQuants are the tags QuantOf recognises, longest first where one
// is a prefix of another.
var knownQuants = []string{
	"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS", "IQ3_S", "IQ3_M",
	"IQ4_NL", "IQ4_XS", "Q2_K_L", "Q2_K_S", "Q2_K", "Q3_K_XL", "Q3_K_L", "Q3_K_M", "Q3_K_S",
	"Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "Q4_0", "Q4_1", "Q4_K_L", "Q4_K_M", "Q4_K_S",
	"Q5_0", "Q5_1", "Q5_K_L", "Q5_K_M", "Q5_K_S", "Q6_K_L", "Q6_K", "Q8_0", "Q8_K",
	"TQ1_0", "TQ2_0", "MXFP4", "BF16", "F16", "F32",
}

// QuantOf returns the quantisation tag found in the file path p, upper
// case, or "" when it holds none of the common ones.
func QuantOf(p string) string {
	for _, q := range knownQuants {
		if MatchQuant(p, q) {
			return q
		}
	}
	return ""
}

// shardOf parses a split model's shard name "PREFIX-00002-of-00003.gguf"
// into its prefix, index and count; ok is false for any other name.
func shardOf(p string) (prefix string, index, count int, ok bool) {
	base := strings.TrimSuffix(p, ".gguf")
	if len(base) == len(p) || len(base) < len("-00001-of-00001") {
		return "", 0, 0, false
	}
	tail := base[len(base)-len("-00001-of-00001"):]
	if tail[0] != '-' || tail[6:10] != "-of-" {
		return "", 0, 0, false
	}
	i, err1 := strconv.Atoi(tail[1:6])
	n, err2 := strconv.Atoi(tail[10:])
	if err1 != nil || err2 != nil || tail[1] == '+' || tail[10] == '+' || n < 1 || n > maxShards || i < 1 || i > n {
		return "", 0, 0, false
	}
	return base[:len(base)-len(tail)], i, n, true
}

// ShardPath returns the path of shard index (from 1) of the split model
// whose shards are named like first.
func shardPath(prefix string, index, count int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, index, count)
}

// model is one pullable model: a single file or the shards of a split one,
// in order.
type model []File

// groupModels returns the models among files' .gguf entries, sorted by
// their first path. A split model missing a shard is an error.
func groupModels(files []File) ([]model, error) {
	byPath := make(map[string]File, len(files))
	for _, f := range files {
		if IsGGUF(f.Path) {
			byPath[f.Path] = f
		}
	}
	var out []model
	for p, f := range byPath {
		prefix, i, n, ok := shardOf(p)
		if !ok {
			out = append(out, model{f})
			continue
		}
		if i != 1 {
			continue // listed with its first shard
		}
		m := make(model, 0, n)
		for k := 1; k <= n; k++ {
			s, ok := byPath[shardPath(prefix, k, n)]
			if !ok {
				return nil, fmt.Errorf("split model %s: shard %d of %d is missing", p, k, n)
			}
			m = append(m, s)
		}
		out = append(out, m)
	}
	// A shard without its first shard is no model at all; it is left out.
	sort.Slice(out, func(a, b int) bool { return out[a][0].Path < out[b][0].Path })
	return out, nil
}

func isProjector(p string) bool {
	return strings.HasPrefix(strings.ToLower(path.Base(p)), "mmproj")
}

// defaultQuant is the tag taken when the user gives none and the
// repository holds more than one model (llama.cpp's -hf default).
const defaultQuant = "Q4_K_M"

// Select returns the files of the model ref names among files (a
// repository's listing, or what is on disk): all shards of a split model,
// the first shard first. The error lists the choices when ref matches
// none or several.
func Select(files []File, ref Ref) ([]File, error) {
	models, err := groupModels(files)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref.Repo, err)
	}
	if ref.File != "" {
		for _, m := range models {
			for _, f := range m {
				if f.Path == ref.File {
					return m, nil
				}
			}
		}
		return nil, fmt.Errorf("%w: %s has no file %s%s", ErrNotFound, ref.Repo, ref.File, choices(models))
	}
	var cands []model
	for _, m := range models {
		if !isProjector(m[0].Path) {
			cands = append(cands, m)
		}
	}
	quant := ref.Quant
	if quant == "" {
		if len(cands) == 1 {
			return cands[0], nil
		}
		quant = defaultQuant
	}
	var match []model
	for _, m := range cands {
		if MatchQuant(m[0].Path, quant) {
			match = append(match, m)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], nil
	case len(match) > 1:
		return nil, fmt.Errorf("%w: %s: %d models match %s; name one as %s/FILE%s", ErrAmbiguous, ref.Repo, len(match), quant, ref.Repo, choices(match))
	case len(models) == 0:
		return nil, fmt.Errorf("%w: %s holds no .gguf file", ErrNotFound, ref.Repo)
	case ref.Quant == "":
		return nil, fmt.Errorf("%w: %s holds several models and none is %s; add :QUANT%s", ErrAmbiguous, ref.Repo, defaultQuant, choices(cands))
	}
	return nil, fmt.Errorf("%w: %s has no .gguf file tagged %s%s", ErrNotFound, ref.Repo, quant, choices(cands))
}

// ErrNotFound is wrapped when a repository, file or tag does not exist.
var ErrNotFound = errors.New("not found")

// ErrAmbiguous is wrapped when a tag matches several models.
var ErrAmbiguous = errors.New("ambiguous")

// choices lists the models for an error message, at most 20.
func choices(models []model) string {
	if len(models) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; available:")
	for i, m := range models {
		if i == 20 {
			fmt.Fprintf(&b, " and %d more", len(models)-i)
			break
		}
		b.WriteString(" ")
		b.WriteString(m[0].Path)
		if q := QuantOf(m[0].Path); q != "" {
			fmt.Fprintf(&b, " (%s)", q)
		}
	}
	return b.String()
}
