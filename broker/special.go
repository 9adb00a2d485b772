package broker

import "sort"

// specialMatcher finds the text of any special token inside a string in
// one pass: at each byte that starts some token, it looks up the
// substrings of every token length in a set.
type specialMatcher struct {
	set   map[string]bool
	lens  []int // distinct token lengths, longest first
	first [256]bool
}

func newSpecialMatcher(tokens []string) *specialMatcher {
	m := &specialMatcher{set: make(map[string]bool, len(tokens))}
	seen := make(map[int]bool)
	for _, t := range tokens {
		if t == "" || m.set[t] {
			continue
		}
		m.set[t] = true
		m.first[t[0]] = true
		if !seen[len(t)] {
			seen[len(t)] = true
			m.lens = append(m.lens, len(t))
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(m.lens)))
	return m
}

// find returns the first special token spelled in s.
func (m *specialMatcher) find(s string) (string, bool) {
	if len(m.set) == 0 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if !m.first[s[i]] {
			continue
		}
		for _, n := range m.lens {
			if i+n <= len(s) && m.set[s[i:i+n]] {
				return s[i : i+n], true
			}
		}
	}
	return "", false
}
