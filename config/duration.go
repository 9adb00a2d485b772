package config

import (
	"encoding/json"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as a string such as "30s" in files
// and flags. Bare numbers are refused: their unit would be a guess.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// Set parses a flag value.
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q (use a unit, e.g. \"30s\")", s)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalJSON accepts a JSON string holding a duration.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"30s\", not %s", b)
	}
	return d.Set(s)
}

// MarshalJSON writes d as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalYAML accepts a YAML string scalar holding a duration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Tag != "") {
		return fmt.Errorf("line %d: a duration must be a string such as \"30s\", not %q", n.Line, n.Value)
	}
	if err := d.Set(n.Value); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}
