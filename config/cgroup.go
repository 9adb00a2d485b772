package config

import (
	"encoding/json"
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// CgroupMode is sandbox_cgroup: whether the worker goes into a cgroup with
// memory, swap and pids limits.
type CgroupMode string

// The sandbox_cgroup values.
const (
	// CgroupAuto uses a cgroup when one can be made (a delegated or
	// root-owned hierarchy) and runs without otherwise; the log says which.
	CgroupAuto CgroupMode = "auto"
	// CgroupOn requires the cgroup: lisa serve fails without one.
	CgroupOn CgroupMode = "true"
	// CgroupOff never uses one.
	CgroupOff CgroupMode = "false"
)

// String returns "auto", "true" or "false".
func (m CgroupMode) String() string {
	if m == "" {
		return string(CgroupAuto)
	}
	return string(m)
}

// Set parses a flag value: auto, or a boolean as strconv.ParseBool reads
// it (true, false, 1, 0, …).
func (m *CgroupMode) Set(s string) error {
	if s == string(CgroupAuto) {
		*m = CgroupAuto
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want auto, true or false, got %q", s)
	}
	*m = CgroupOff
	if b {
		*m = CgroupOn
	}
	return nil
}

// IsBoolFlag lets --sandbox-cgroup alone mean true, as when it was a
// boolean; --sandbox-cgroup=auto gives the third value.
func (m *CgroupMode) IsBoolFlag() bool { return true }

// Required reports whether a cgroup must be used.
func (m CgroupMode) Required() bool { return m == CgroupOn }

// Auto reports whether a cgroup is used when available.
func (m CgroupMode) Auto() bool { return m == CgroupAuto || m == "" }

// UnmarshalJSON accepts true, false or "auto".
func (m *CgroupMode) UnmarshalJSON(b []byte) error {
	var v bool
	if err := json.Unmarshal(b, &v); err == nil {
		return m.Set(strconv.FormatBool(v))
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil || s != string(CgroupAuto) {
		return fmt.Errorf("sandbox_cgroup must be true, false or \"auto\", not %s", b)
	}
	*m = CgroupAuto
	return nil
}

// MarshalJSON writes "auto" as a string and the others as booleans.
func (m CgroupMode) MarshalJSON() ([]byte, error) {
	if m.Auto() {
		return json.Marshal(string(CgroupAuto))
	}
	return json.Marshal(m.Required())
}

// UnmarshalYAML accepts true, false or auto.
func (m *CgroupMode) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!bool" && n.Tag != "!!str" && n.Tag != "") {
		return fmt.Errorf("line %d: sandbox_cgroup must be true, false or auto, not %q", n.Line, n.Value)
	}
	if n.Tag == "!!str" && n.Value != string(CgroupAuto) {
		return fmt.Errorf("line %d: sandbox_cgroup must be true, false or auto, not %q", n.Line, n.Value)
	}
	if err := m.Set(n.Value); err != nil {
		return fmt.Errorf("line %d: sandbox_cgroup: %w", n.Line, err)
	}
	return nil
}
